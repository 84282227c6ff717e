/**
 * The alert rules and the metric names pass Prometheus's own tool: `promtool check rules`
 * (syntax, templates), `promtool test rules` (ops/prometheus/vigil-rules.test.yaml: each alert
 * fires on sustained impact, stays quiet when healthy or on a blip, absent() branches), the
 * PrometheusRule in k8s/ carries exactly the same groups, and `promtool check metrics` finds
 * nothing to complain about in what /metrics serves.
 * Locally a missing promtool skips with its name; with CI=true it fails (.ci/run installs it).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/metrics.js';
import { PROMTOOL, promtoolMissing } from '../helpers/prometheus.js';

const ROOT = join(import.meta.dirname, '..', '..');
const RULES = join(ROOT, 'ops', 'prometheus', 'vigil-rules.yaml');
const RULE_TESTS = join(ROOT, 'ops', 'prometheus', 'vigil-rules.test.yaml');

const missing = promtoolMissing();
if (missing && process.env.CI) throw new Error(`${missing}: CI must check the alert rules (apt-get install prometheus)`);
if (missing) process.stderr.write(`promtool tests skipped: ${missing} (apt-get install prometheus)\n`);

function promtool(args: string[], input?: string) {
  const r = spawnSync(PROMTOOL, args, { cwd: ROOT, input, encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, output: `${r.stdout ?? ''}${r.stderr ?? ''}`, error: r.error };
}

describe.skipIf(missing)(missing ? `promtool (skipped: ${missing})` : 'promtool', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'vigil-promtool-'));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('check rules: the rules file is valid and every alert template renders', () => {
    const r = promtool(['check', 'rules', RULES]);
    expect(r.error).toBeUndefined();
    expect(r.status, r.output).toBe(0);
    expect(r.output).toMatch(/SUCCESS: \d+ rules found/);
  });

  it('test rules: every alert fires on sustained impact and stays quiet on blips', () => {
    const r = promtool(['test', 'rules', RULE_TESTS]);
    expect(r.status, r.output).toBe(0);
    expect(r.output).toContain('SUCCESS');
    // each alert of the rules file has at least one test that expects it to fire
    const alerts = (parse(readFileSync(RULES, 'utf8')) as { groups: { rules: { alert?: string }[] }[] }).groups.flatMap((g) =>
      g.rules.map((x) => x.alert),
    );
    const tests = parse(readFileSync(RULE_TESTS, 'utf8')) as {
      tests: { alert_rule_test?: { alertname: string; exp_alerts?: unknown[] }[] }[];
    };
    const proven = new Set(
      tests.tests.flatMap((t) => (t.alert_rule_test ?? []).filter((a) => (a.exp_alerts ?? []).length > 0).map((a) => a.alertname)),
    );
    const quiet = new Set(
      tests.tests.flatMap((t) => (t.alert_rule_test ?? []).filter((a) => (a.exp_alerts ?? []).length === 0).map((a) => a.alertname)),
    );
    expect(
      alerts.filter((a) => !proven.has(a ?? '')),
      'alerts never shown to fire',
    ).toEqual([]);
    expect(
      alerts.filter((a) => !quiet.has(a ?? '')),
      'alerts never shown to stay quiet',
    ).toEqual([]);
  });

  it('the PrometheusRule in k8s/ carries exactly the rules file, and promtool accepts it', () => {
    const crd = parse(readFileSync(join(ROOT, 'k8s', 'prometheusrule.yaml'), 'utf8')) as { spec: unknown };
    expect(crd.spec, 'run `node scripts/sync-dashboard.mjs`').toEqual(parse(readFileSync(RULES, 'utf8')));
    const extracted = join(tmp, 'from-crd.yaml');
    writeFileSync(extracted, stringify(crd.spec));
    const r = promtool(['check', 'rules', extracted]);
    expect(r.status, r.output).toBe(0);
  });

  it('check metrics: no metric /metrics serves breaks a naming rule (no gauge ends in _total)', async () => {
    const m = createMetrics({ replica: 'promtool-test' });
    const text = await m.registry.metrics();
    expect(text).toContain('vigil_nodejs_eventloop_lag_p99_seconds');
    const r = promtool(['check', 'metrics'], text);
    expect(r.output.trim()).toBe('');
    expect(r.status, r.output).toBe(0);
  });
});
