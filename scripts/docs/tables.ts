/**
 * The reference tables of the docs, each rendered from the one declaration of its facts:
 * settings from the zod schema, metrics from the prom-client registry, collections and
 * indexes from the mongoose schemas, error codes from their declaration, routes from the
 * OpenAPI document, layering rules from .dependency-cruiser.cjs. Written into the docs by
 * scripts/gen-docs.ts; each returns Markdown before Prettier formats it.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import mongoose from 'mongoose';
import client from 'prom-client';
import type { z } from 'zod';
import { ENV_GROUPS, EnvSchema, type EnvDoc } from '../../src/config/env.js';
import { HTTP_METHODS, openapiDocument, type Operation } from '../../src/http/openapi.js';
import { errorCatalog } from '../../src/http/error-codes.js';
import { createMetrics } from '../../src/metrics.js';
import { allowedLabelValues } from '../../src/metrics/labelled.js';
import { makeModels } from '../../src/store/mongo/schemas.js';

const code = (s: string | number) => `\`${s}\``;
const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

export function table(headers: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.map(cell).join(' | ')} |`;
  return [line(headers), line(headers.map(() => '---')), ...rows.map(line)].join('\n');
}

const SHAPE: Readonly<Record<string, z.ZodType>> = EnvSchema.shape;

function envDoc(name: string, schema: z.ZodType | undefined): EnvDoc {
  const meta = schema?.meta();
  if (typeof meta?.description !== 'string') throw new Error(`${name}: no description in src/config/env.ts (doc(schema, description))`);
  return { description: meta.description, unset: typeof meta.unset === 'string' ? meta.unset : undefined };
}

/** What the schema yields for a variable that is not set: its default. */
function defaults(): Record<string, unknown> {
  return EnvSchema.parse({});
}

function defaultText(value: unknown, doc: EnvDoc): string {
  if (value === undefined) return doc.unset ?? 'unset';
  return code(String(value));
}

/** One table per topic of src/config/env.ts. */
export function configTables(): string {
  const d = defaults();
  const listed = ENV_GROUPS.flatMap(([, vars]) => Object.keys(vars));
  const missing = Object.keys(SHAPE).filter((k) => !listed.includes(k));
  if (missing.length > 0) throw new Error(`variables in no group of ENV_GROUPS: ${missing.join(', ')}`);
  const twice = listed.filter((k, i) => listed.indexOf(k) !== i);
  if (twice.length > 0) throw new Error(`variables in two groups of ENV_GROUPS (the later one wins): ${twice.join(', ')}`);
  return ENV_GROUPS.map(([title, vars]) => {
    const rows = Object.entries(vars).map(([name, schema]) => {
      const doc = envDoc(name, schema);
      return [code(name), defaultText(d[name], doc), doc.description];
    });
    return `### ${title}\n\n${table(['variable', 'default', 'meaning'], rows)}`;
  }).join('\n\n');
}

/** Environment a Kubernetes pod may need that is not Vigil's own setting. */
const NOT_VIGIL = new Set(['NODE_OPTIONS']);

interface EnvLine {
  key: string;
  value: string;
  why: string;
}

/** `KEY=value` lines and the comment right above each (a comment followed by a blank line is about the file). */
export function parseConfigMapEnv(text: string): EnvLine[] {
  const out: EnvLine[] = [];
  let comment: string[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '') comment = [];
    else if (line.startsWith('#')) comment.push(line.replace(/^#\s?/, ''));
    else {
      const eq = line.indexOf('=');
      if (eq <= 0) throw new Error(`k8s/vigil-config.env: not KEY=value: ${line}`);
      out.push({ key: line.slice(0, eq), value: line.slice(eq + 1), why: comment.join(' ') });
      comment = [];
    }
  }
  return out;
}

/** What k8s/vigil-config.env sets, against the defaults; refuses a key or value the schema would refuse. */
export function k8sConfigTable(root: string): string {
  const lines = parseConfigMapEnv(readFileSync(join(root, 'k8s', 'vigil-config.env'), 'utf8'));
  const unknown = lines.filter((l) => !NOT_VIGIL.has(l.key) && !(l.key in SHAPE)).map((l) => l.key);
  if (unknown.length > 0) throw new Error(`k8s/vigil-config.env: not settings of src/config/env.ts: ${unknown.join(', ')}`);
  const parsed = EnvSchema.safeParse(Object.fromEntries(lines.map((l) => [l.key, l.value])));
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new Error(`k8s/vigil-config.env: invalid values: ${issues.join('; ')}`);
  }
  const d = defaults();
  const rows = lines.map((l) => {
    if (NOT_VIGIL.has(l.key)) return [code(l.key), code(l.value), '(not a Vigil setting)', l.why];
    const data: Record<string, unknown> = parsed.data;
    const def = d[l.key];
    const same = def !== undefined && String(def) === String(data[l.key]);
    return [code(l.key), code(l.value), same ? 'the default, pinned' : defaultText(def, envDoc(l.key, SHAPE[l.key])), l.why];
  });
  return table(['variable', 'value', 'default', 'why'], rows);
}

function metricType(m: unknown): string {
  if (m instanceof client.Counter) return 'counter';
  if (m instanceof client.Gauge) return 'gauge';
  if (m instanceof client.Histogram) return 'histogram';
  if (m instanceof client.Summary) return 'summary';
  throw new Error('unknown metric type');
}

/** Every metric of ours (prom-client's default process metrics are left out), with its label values. */
export function metricsTable(): string {
  const m = createMetrics({ replica: 'docs', collectDefault: false });
  const rows = m.registry.getMetricsAsArray().map((metric) => {
    const declared = allowedLabelValues(metric);
    const names = (metric as { labelNames?: unknown }).labelNames;
    if (Array.isArray(names) && names.length > 0 && !declared) throw new Error(`${metric.name}: labels without declared values`);
    const labels = Object.entries(declared ?? {}).map(([label, spec]) =>
      'open' in spec ? `${code(label)}: ${spec.open}` : `${code(label)}: ${spec.map(code).join(', ')}`,
    );
    return [code(metric.name), metricType(metric), labels.join('; '), metric.help];
  });
  return table(['metric', 'type', 'labels', 'help'], rows);
}

const keys = (fields: Record<string, unknown>) =>
  `{${Object.entries(fields)
    .map(([k, v]) => `${k}: ${String(v)}`)
    .join(', ')}}`;

/** Every collection of the MongoDB store and the indexes created at start-up. */
export async function mongoIndexesTable(): Promise<string> {
  const conn = mongoose.createConnection();
  try {
    const rows: string[][] = [];
    for (const model of Object.values(makeModels(conn))) {
      const collection = String(model.schema.get('collection'));
      const indexes = model.schema.indexes();
      if (indexes.length === 0) rows.push([code(collection), '—', code('{_id: 1}'), 'only the primary key']);
      for (const [fields, options] of indexes) {
        const o = options as { name?: unknown; unique?: unknown; sparse?: unknown };
        const kind = [o.unique ? 'unique' : '', o.sparse ? 'sparse' : ''].filter(Boolean).join(', ');
        rows.push([code(collection), code(String(o.name)), code(keys(fields)), kind]);
      }
    }
    return table(['collection', 'index', 'keys', 'options'], rows);
  } finally {
    await conn.close();
  }
}

/** Every error code a client can get, by status. */
export function errorsTable(): string {
  const rows = errorCatalog()
    .sort((a, b) => a.status - b.status)
    .map((e) => [String(e.status), code(e.code), e.meaning]);
  return table(['status', 'code', 'meaning'], rows);
}

function auth(op: Operation): string {
  const security = op.security as unknown[] | undefined;
  if (Array.isArray(security) && security.length === 0) {
    const params = (op.parameters ?? []) as { name?: string; in?: string }[];
    return params.some((p) => p.in === 'header' && p.name === 'X-Twilio-Signature') ? 'Twilio signature' : 'none';
  }
  return Array.isArray(op.tags) && op.tags.includes('admin') ? 'JWT, moderator' : 'JWT';
}

/** Every route the OpenAPI document describes. */
export function routesTable(): string {
  const env = EnvSchema.parse({});
  const doc = openapiDocument({
    minSeconds: env.TIMER_MIN_SECONDS,
    maxSeconds: env.TIMER_MAX_SECONDS,
    maxExtensions: env.TIMER_MAX_EXTENSIONS,
    maxTotalSeconds: env.TIMER_MAX_TOTAL_SECONDS,
  });
  const rows: string[][] = [];
  for (const [path, item] of Object.entries(doc.paths))
    for (const method of HTTP_METHODS) {
      const op = item[method];
      if (op) rows.push([method.toUpperCase(), code(path), auth(op), String(op.summary ?? '')]);
    }
  return table(['method', 'path', 'auth', 'summary'], rows);
}

interface CruiserRule {
  name: string;
  comment?: string;
}

/** Every rule `npm run lint:layers` enforces, with why. */
export function layersTable(root: string): string {
  const config = createRequire(import.meta.url)(join(root, '.dependency-cruiser.cjs')) as { forbidden: CruiserRule[] };
  const rows = config.forbidden.map((r) => {
    if (!r.comment) throw new Error(`.dependency-cruiser.cjs: rule ${r.name} has no comment`);
    return [code(r.name), r.comment];
  });
  return table(['rule', 'what it refuses, and why'], rows);
}
