/**
 * What the on-call's dashboard shows during a burst of deadlines and during a Redis outage,
 * read from a real Prometheus scraping real Vigil replicas. Prints every panel's values at
 * each moment as Markdown (docs/operating.md quotes a run); asserts nothing.
 *
 *   npm run build && npx tsx scripts/ops-snapshot.ts [--timers 10000] [--replicas 2] [--outage 30] [--out file.md]
 *
 * Two replicas with Redis on one SQLite file, Debian's Prometheus scraping every second with the
 * alert rules loaded, the console carrier. Timers are armed through the API so that all their
 * deadlines fall in one second; each owner has two contacts.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { parse } from 'yaml';
import { assertBuilt, startCluster, type Cluster } from '../test/helpers/cluster.js';
import { startPrometheus, type TestPrometheus } from '../test/helpers/prometheus.js';
import { startRedis } from '../test/helpers/redis-server.js';

const { values: args } = parseArgs({
  options: {
    timers: { type: 'string', default: '10000' },
    replicas: { type: 'string', default: '2' },
    outage: { type: 'string', default: '30' },
    out: { type: 'string' },
  },
});
const TIMERS = Number(args.timers);
const REPLICAS = Number(args.replicas);
const OUTAGE_S = Number(args.outage);
const JOB = 'vigil';
const RATE_INTERVAL = '15s';
const ROOT = new URL('..', import.meta.url).pathname;

interface Panel {
  type: string;
  title: string;
  fieldConfig?: { defaults?: { unit?: string } };
  targets?: { expr: string; refId: string; legendFormat?: string }[];
}
const dashboard = JSON.parse(readFileSync(join(ROOT, 'ops', 'grafana', 'vigil-dashboard.json'), 'utf8')) as { panels: Panel[] };
const rulesFile = join(ROOT, 'ops', 'prometheus', 'vigil-rules.yaml');
const alertNames = (parse(readFileSync(rulesFile, 'utf8')) as { groups: { rules: { alert: string }[] }[] }).groups.flatMap((g) =>
  g.rules.map((r) => r.alert),
);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const out: string[] = [];
const say = (line = '') => {
  out.push(line);
  console.log(line);
};

function formatValue(raw: string, unit: string | undefined): string {
  const v = Number(raw);
  if (!Number.isFinite(v)) return raw;
  if (unit === 's') return v >= 1 ? `${v.toFixed(2)} s` : `${(v * 1000).toFixed(1)} ms`;
  if (unit === 'percentunit') return `${(v * 100).toFixed(2)} %`;
  if (unit === 'reqps' || unit === 'ops') return `${v.toFixed(v >= 10 ? 0 : 2)}/s`;
  return Number.isInteger(v) ? String(v) : v.toFixed(2);
}

const legend = (format: string | undefined, metric: Record<string, string>) =>
  (format ?? '').replace(/\{\{\s*(\w+)\s*\}\}/g, (_m, k: string) => metric[k] ?? '') || JSON.stringify(metric);

/** Every panel's values now, as one Markdown table; then the alerts that are pending or firing. */
async function snapshot(prom: TestPrometheus, moment: string): Promise<void> {
  say(`### ${moment}`);
  say();
  say('| panel | series | value |');
  say('|---|---|---|');
  for (const p of dashboard.panels.filter((x) => x.type !== 'row')) {
    const cells: string[] = [];
    for (const t of p.targets ?? []) {
      const r = await prom.query(t.expr.replaceAll('$__rate_interval', RATE_INTERVAL).replaceAll('$job', JOB));
      if (r.status !== 'success') cells.push(`${t.refId}: error ${r.error ?? ''}`);
      for (const s of (r.data?.result ?? []).slice(0, 8)) {
        cells.push(`${legend(t.legendFormat, s.metric)} = ${formatValue(s.value?.[1] ?? '', p.fieldConfig?.defaults?.unit)}`);
      }
    }
    say(
      `| ${p.title} | ${cells.length ? cells.map((c) => c.split(' = ')[0]).join('<br>') : '—'} | ${cells.map((c) => c.split(' = ')[1]).join('<br>') || 'no data'} |`,
    );
  }
  const alerts = (await prom.api('/api/v1/alerts')) as unknown as {
    data?: { alerts?: { labels: { alertname: string }; state: string }[] };
  };
  const active = (alerts.data?.alerts ?? []).filter((a) => alertNames.includes(a.labels.alertname));
  say();
  say(`Alerts: ${active.length ? active.map((a) => `${a.labels.alertname} (${a.state})`).join(', ') : 'none pending or firing'}`);
  say();
}

async function arm(c: Cluster, count: number, dueAt: number, prefix: string): Promise<number> {
  let next = 0;
  let armed = 0;
  const worker = async () => {
    while (next < count) {
      const n = next++;
      const user = `${prefix}${n}`;
      const token = c.token(user, { name: `Person ${n}` });
      const on = n % c.size;
      const contacts = [
        { name: 'First', phone: `+1415${String(1_000_000 + ((n * 2) % 8_999_999)).padStart(7, '0')}` },
        { name: 'Second', phone: `+1415${String(1_000_001 + ((n * 2) % 8_999_999)).padStart(7, '0')}` },
      ];
      await c.api(on, token, 'PUT', '/v1/me/contacts', { contacts });
      // an integer duration from now: every deadline lands in [dueAt, dueAt + 1 s)
      const durationSeconds = Math.ceil((dueAt - Date.now()) / 1000);
      const r = await c.api(on, token, 'POST', '/v1/timers', { durationSeconds, locationName: 'Cafe' });
      if (r.status === 201) armed++;
    }
  };
  await Promise.all(Array.from({ length: 32 }, worker));
  return armed;
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check()) return true;
    await sleep(500);
  }
  say(`(gave up waiting for ${what} after ${timeoutMs / 1000} s)`);
  return false;
}

const num = async (prom: TestPrometheus, expr: string) => Number((await prom.query(expr)).data?.result[0]?.value?.[1] ?? NaN);

assertBuilt();
const dir = mkdtempSync(join(tmpdir(), 'vigil-ops-'));
const redis = await startRedis();
const cluster = await startCluster({
  replicas: REPLICAS,
  dataDir: dir,
  redisUrl: redis.url,
  env: { LOG_LEVEL: 'warn', TIMER_MIN_SECONDS: '1' },
});
const prom = await startPrometheus({
  dir,
  job: JOB,
  targets: Array.from({ length: REPLICAS }, (_, i) => cluster.url(i).replace('http://', '')),
  ruleFiles: [rulesFile],
});
try {
  say(`## Dashboard during a burst of ${TIMERS} deadlines and a ${OUTAGE_S} s Redis outage`);
  say();
  say(
    `${REPLICAS} replicas with Redis on one SQLite file, console carrier, Prometheus scraping every second; rates over ${RATE_INTERVAL}.`,
  );
  say();
  const armSeconds = Math.max(30, Math.ceil(TIMERS / 150));
  const dueAt = Date.now() + armSeconds * 1000;
  const armed = await arm(cluster, TIMERS, dueAt, 'burst-');
  say(`Armed ${armed} timers due at ${new Date(dueAt).toISOString()} (+1 s).`);
  say();
  await sleep(Math.max(0, dueAt - Date.now() - 2000));
  await snapshot(prom, 'just before the deadline');
  await sleep(Math.max(0, dueAt - Date.now() + 4000));
  await snapshot(prom, '3 s after the deadline: the burst escalating');
  const start = Date.now();
  await waitFor(
    'every SOS escalated',
    async () =>
      (await num(prom, `sum(vigil_timers_escalated_total{job="${JOB}"})`)) >= armed &&
      (await num(prom, `max(vigil_timers_overdue{job="${JOB}"})`)) === 0,
    600_000,
  );
  say(`Every incident committed (as scraped) ${((Date.now() - dueAt) / 1000).toFixed(1)} s after the deadline.`);
  say();
  await snapshot(prom, 'the burst escalated; texts going out');
  await waitFor(
    'every text sent',
    async () => (await num(prom, `max(vigil_delivery_oldest_pending_age_seconds{job="${JOB}"})`)) === 0,
    900_000,
  );
  say(
    `No pending text ${((Date.now() - dueAt) / 1000).toFixed(1)} s after the deadline (${((Date.now() - start) / 1000).toFixed(1)} s after the snapshot above).`,
  );
  say();
  await sleep(16_000);
  await snapshot(prom, 'after the burst (rates settle over 15 s)');

  // Redis outage: timers due during it still escalate (every replica sweeps without the lock)
  const during = Math.min(200, TIMERS);
  const outageDue = Date.now() + 40_000;
  await arm(cluster, during, outageDue, 'outage-');
  await sleep(Math.max(0, outageDue - Date.now() - 10_000));
  await redis.stop();
  const stoppedAt = Date.now();
  say(`Redis stopped at ${new Date(stoppedAt).toISOString()}; ${during} timers due 10 s later.`);
  say();
  await sleep(Math.max(0, stoppedAt + OUTAGE_S * 1000 - 3000 - Date.now()));
  await snapshot(prom, `${OUTAGE_S - 3} s into the Redis outage`);
  await sleep(Math.max(0, stoppedAt + OUTAGE_S * 1000 - Date.now()));
  await redis.start();
  say(`Redis started again after ${((Date.now() - stoppedAt) / 1000).toFixed(1)} s (empty: it holds no truth).`);
  say();
  await sleep(20_000);
  await snapshot(prom, '20 s after Redis came back');
} finally {
  const file = args.out ?? join(ROOT, 'artifacts', 'ops-snapshot.md');
  writeFileSync(file, `${out.join('\n')}\n`);
  console.error(`written to ${file}`);
  await prom.stop();
  await cluster.stopAll();
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
}
