/**
 * The dashboard is a valid Grafana dashboard by Grafana's own types: a TypeScript file that
 * assigns ops/grafana/vigil-dashboard.json, as an object literal, to `@grafana/schema`'s
 * `Dashboard` (stat and time-series panels with their plugin's `Options` and field config,
 * targets as Prometheus queries) is compiled with `tsc --noEmit`. An object literal gets
 * excess-property checks, so a misspelt or unknown field fails too. The schema declares some
 * fields as TypeScript enums, which no JSON value can be; `Literal<T>` turns each string enum
 * into the union of its values and changes nothing else.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { typecheckFile } from '../helpers/typecheck.js';

const ROOT = join(import.meta.dirname, '..', '..');

const CHECK = (json: string) => `import type { DataQuery, Dashboard, FieldConfigSource, Panel, RowPanel } from '@grafana/schema';
import type { Options as StatOptions } from '@grafana/schema/dist/esm/raw/composable/stat/panelcfg/x/StatPanelCfg_types.gen';
import type { FieldConfig as TimeSeriesFieldConfig, Options as TimeSeriesOptions } from '@grafana/schema/dist/esm/raw/composable/timeseries/panelcfg/x/TimeSeriesPanelCfg_types.gen';

type Literal<T> = T extends string ? \`\${T}\` : T extends readonly (infer U)[] ? Literal<U>[] : T extends object ? { [K in keyof T]: Literal<T[K]> } : T;
interface PrometheusQuery extends DataQuery {
  expr: string;
  legendFormat?: string;
  range?: boolean;
  instant?: boolean;
}
type Typed<Type extends string, Options, Custom> = Omit<Literal<Panel>, 'type' | 'options' | 'fieldConfig' | 'targets'> & {
  type: Type;
  options: Literal<Options>;
  fieldConfig: Literal<FieldConfigSource<Custom>>;
  targets: Literal<PrometheusQuery>[];
};
type VigilDashboard = Omit<Literal<Dashboard>, 'panels'> & {
  panels: (Typed<'stat', StatOptions, Record<string, never>> | Typed<'timeseries', TimeSeriesOptions, TimeSeriesFieldConfig> | (Literal<RowPanel> & { type: 'row' }))[];
};

export const dashboard: VigilDashboard = ${json};
`;

describe('Grafana dashboard schema', () => {
  mkdirSync(join(ROOT, 'artifacts'), { recursive: true });
  // inside the repository, so that @grafana/schema resolves from its node_modules
  const dir = mkdtempSync(join(ROOT, 'artifacts', 'dashboard-check-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const tsc = (json: string) => {
    return typecheckFile(dir, CHECK(json), ROOT);
  };

  it('ops/grafana/vigil-dashboard.json is a @grafana/schema Dashboard', () => {
    const r = tsc(readFileSync(join(ROOT, 'ops', 'grafana', 'vigil-dashboard.json'), 'utf8'));
    expect(r.output).toBe('');
    expect(r.status).toBe(0);
  });

  it('the check refuses what Grafana would not load (an empty variable `current`, an unknown panel field)', () => {
    const d = JSON.parse(readFileSync(join(ROOT, 'ops', 'grafana', 'vigil-dashboard.json'), 'utf8')) as {
      templating: { list: Record<string, unknown>[] };
      panels: Record<string, unknown>[];
    };
    (d.templating.list[0] as Record<string, unknown>).current = {};
    (d.panels[1] as Record<string, unknown>).colour = 'red';
    const r = tsc(JSON.stringify(d, null, 2));
    expect(r.status).not.toBe(0);
    expect(r.output).toMatch(/missing the following properties .*: text, value/);
    expect(r.output).toMatch(/colour/);
  });
});
