/**
 * What the on-call sees is computed from what Vigil really exports: a real Prometheus
 * (Debian's /usr/bin/prometheus, 1 s scrapes, the alert rules loaded) scrapes real Vigil
 * processes (`node dist/main.js`) under generated traffic — timers that expire and text
 * their contacts, a check-in, an "I'm safe" after the SOS, refused commands — and then
 * EVERY dashboard query and EVERY alert expression is evaluated through Prometheus's HTTP
 * API. A query error fails; a dashboard query with no series fails (the traffic exercises
 * every panel); an alert that matches a healthy Vigil fails; a rule Prometheus cannot
 * evaluate fails. Run embedded (one replica, scraped on its API port) and, when redis-server
 * is installed, as two replicas sharing a Redis lock, scraped as k8s/ deploys them: on their
 * own METRICS_PORT, with a METRICS_TOKEN.
 * Locally a missing prometheus (or redis-server, for the second case) skips with its name;
 * with CI=true it fails.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { afterEach, describe, expect, it } from 'vitest';
import { assertBuilt, startCluster, type Cluster } from '../helpers/cluster.js';
import {
  prometheusMissing,
  promtoolMissing,
  PROMTOOL,
  startPrometheus,
  type PromResult,
  type TestPrometheus,
} from '../helpers/prometheus.js';
import { freePort } from '../helpers/net.js';
import { redisAvailable, startRedis, type RedisServer } from '../helpers/redis-server.js';
import { eventually } from '../helpers/vigil.js';

const ROOT = join(import.meta.dirname, '..', '..');
const JOB = 'vigil';
const METRICS_TOKEN = 'prometheus-live-metrics-token-0123456789';
// Grafana's $__rate_interval is at least four scrape intervals
const RATE_INTERVAL = '10s';

const missing = prometheusMissing();
if (missing && process.env.CI) throw new Error(`${missing}: CI must evaluate the dashboard and alerts (apt-get install prometheus)`);
if (missing) process.stderr.write(`live Prometheus tests skipped: ${missing} (apt-get install prometheus)\n`);

interface Target {
  expr: string;
  refId: string;
}
const dashboard = JSON.parse(readFileSync(join(ROOT, 'ops', 'grafana', 'vigil-dashboard.json'), 'utf8')) as {
  panels: { type: string; title: string; targets?: Target[] }[];
  templating: { list: { name: string; query?: string | { query?: string } }[] };
};
const rulesFile = join(ROOT, 'ops', 'prometheus', 'vigil-rules.yaml');
const alerts = (parse(readFileSync(rulesFile, 'utf8')) as { groups: { rules: { alert: string; expr: string }[] }[] }).groups.flatMap(
  (g) => g.rules,
);

/** A panel query as Grafana sends it: variables replaced by what a healthy scrape has. */
const grafanaExpr = (expr: string) => expr.replaceAll('$__rate_interval', RATE_INTERVAL).replaceAll('$job', JOB);
const seriesCount = (r: PromResult) => r.data?.result.length ?? 0;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/**
 * `metricsListener`: scraped as k8s/ deploys it, on each replica's METRICS_PORT with a
 * METRICS_TOKEN; otherwise on the API's port, the embedded default.
 */
async function setUp(replicas: number, redis?: RedisServer, metricsListener = false): Promise<{ cluster: Cluster; prom: TestPrometheus }> {
  assertBuilt();
  const dir = mkdtempSync(join(tmpdir(), 'vigil-prom-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const metricsPorts = metricsListener ? await Promise.all(Array.from({ length: replicas }, () => freePort())) : [];
  const env = (i: number): Record<string, string> => ({
    LOG_LEVEL: 'info',
    TIMER_MIN_SECONDS: '1',
    // the traffic leaves two SOS unacknowledged; a healthy run must not page however slow the machine
    PAGE_UNACKNOWLEDGED_AFTER_SECONDS: '3600',
    ...(metricsListener ? { METRICS_PORT: String(metricsPorts[i]), METRICS_TOKEN } : {}),
  });
  const cluster = await startCluster({ replicas, dataDir: dir, redisUrl: redis?.url, env });
  cleanups.push(() => cluster.stopAll());
  const targets = Array.from({ length: replicas }, (_, i) =>
    metricsListener ? `127.0.0.1:${String(metricsPorts[i])}` : cluster.url(i).replace('http://', ''),
  );
  const prom = await startPrometheus({
    dir,
    job: JOB,
    targets,
    ruleFiles: [rulesFile],
    ...(metricsListener ? { bearerToken: METRICS_TOKEN } : {}),
  });
  cleanups.push(() => prom.stop());
  return { cluster, prom };
}

/** Timers that expire and text two contacts each, a check-in, "I'm safe" after an SOS, refused commands. */
async function generateTraffic(c: Cluster): Promise<void> {
  const on = (n: number) => n % c.size;
  const admin = c.token('mod', { admin: true });
  const expiring = ['ana', 'ben', 'cai'];
  const armed = new Map<string, string>();
  for (const [n, user] of expiring.entries()) {
    const token = c.token(user, { name: user });
    const contacts = [
      { name: 'First', phone: `+1415555${String(1000 + n * 2)}` },
      { name: 'Second', phone: `+1415555${String(1001 + n * 2)}` },
    ];
    expect((await c.api(on(n), token, 'PUT', '/v1/me/contacts', { contacts })).status).toBe(200);
    const t = await c.api(
      on(n),
      token,
      'POST',
      '/v1/timers',
      { durationSeconds: 1, locationName: 'Cafe' },
      { 'Idempotency-Key': `k-${user}` },
    );
    expect(t.status).toBe(201);
    armed.set(user, String(t.body.timer.id));
    // refused: one live timer per person
    expect((await c.api(on(n + 1), token, 'POST', '/v1/timers', { durationSeconds: 60 })).body.error.code).toBe('live_timer_exists');
  }
  // a check-in before the deadline
  const dee = c.token('dee', { name: 'Dee' });
  const live = await c.api(0, dee, 'POST', '/v1/timers', { durationSeconds: 600 });
  expect((await c.api(on(1), dee, 'POST', `/v1/timers/${String(live.body.timer.id)}/safe`)).status).toBe(200);
  // refused: bad input, someone else's timer, no token
  expect((await c.api(0, dee, 'POST', '/v1/timers', { durationSeconds: 0 })).status).toBe(400);
  expect((await c.api(on(1), dee, 'POST', `/v1/timers/${armed.get('ana') ?? ''}/cancel`)).body.error.code).toBe('timer_not_found');
  expect((await c.api(0, 'not-a-token', 'POST', '/v1/timers', { durationSeconds: 60 })).status).toBe(401);

  // every SOS opens and both texts of each are accepted by the (console) carrier
  await eventually(
    async () => {
      const r = await c.api(0, admin, 'GET', '/v1/admin/incidents');
      const incidents = (r.body.incidents ?? []) as { deliveries?: { status: string }[] }[];
      return (
        incidents.length === expiring.length && incidents.every((i) => (i.deliveries ?? []).filter((d) => d.status === 'sent').length === 2)
      );
    },
    'three SOS incidents with both texts sent',
    30_000,
  );
  // "I'm safe" after the SOS: a false alarm and an all-clear text to each contact
  const safe = await c.api(on(1), c.token('ana', { name: 'ana' }), 'POST', `/v1/timers/${armed.get('ana') ?? ''}/safe`);
  expect(safe.status).toBe(200);
}

async function expectEveryQueryAnswers(prom: TestPrometheus, cluster: Cluster): Promise<void> {
  // Prometheus has scraped the traffic's results, on every replica
  await eventually(
    async () => {
      const r = await prom.query(
        `sum(vigil_sos_sms_latency_seconds_count{job="${JOB}"}) >= 6 and sum(vigil_commands_total{job="${JOB}",outcome="refused"}) >= 4`,
      );
      const up = await prom.query(`count(up{job="${JOB}"} == 1) == ${cluster.size}`);
      return seriesCount(r) === 1 && seriesCount(up) === 1;
    },
    'Prometheus to scrape the SOS texts and refused commands from every replica',
    30_000,
    250,
  );
  // two more scrapes of every replica, so every rate window holds two samples of the new series
  const seen = Date.now() / 1000;
  await eventually(
    async () => Number((await prom.query(`min(timestamp(up{job="${JOB}"}))`)).data?.result[0]?.value?.[1] ?? 0) > seen + 1.5,
    'two more scrapes',
    10_000,
    200,
  );

  const failures: string[] = [];
  for (const p of dashboard.panels.filter((x) => x.type !== 'row')) {
    for (const t of p.targets ?? []) {
      const r = await prom.queryRange(grafanaExpr(t.expr), 30);
      if (r.status !== 'success') failures.push(`panel "${p.title}" ${t.refId}: ${r.errorType ?? ''} ${r.error ?? ''}`);
      else if (seriesCount(r) === 0) failures.push(`panel "${p.title}" ${t.refId}: no data for ${t.expr}`);
    }
  }
  for (const v of dashboard.templating.list) {
    const q = typeof v.query === 'string' ? v.query : v.query?.query;
    const m = q ? /^label_values\((\w+), (\w+)\)$/.exec(q) : null;
    if (!m) continue;
    const r = (await prom.api(`/api/v1/label/${m[2]}/values?match[]=${m[1]}`)) as unknown as { data?: string[] };
    if (!(r.data ?? []).includes(JOB)) failures.push(`variable ${v.name}: ${q} does not offer ${JOB}`);
  }
  for (const a of alerts) {
    const r = await prom.query(a.expr);
    if (r.status !== 'success') failures.push(`alert ${a.alert}: ${r.errorType ?? ''} ${r.error ?? ''}`);
    else if (seriesCount(r) > 0) failures.push(`alert ${a.alert} matches a healthy Vigil: ${JSON.stringify(r.data?.result)}`);
  }
  expect(failures).toEqual([]);

  // the rules Prometheus loaded evaluate without error, and nothing is pending or firing
  const rules = await eventually(
    async () => {
      const r = (await prom.api('/api/v1/rules')) as unknown as {
        data: { groups: { rules: { name: string; health: string; lastError?: string; state?: string }[] }[] };
      };
      const all = r.data.groups.flatMap((g) => g.rules);
      return all.length === alerts.length && all.every((x) => x.health !== 'unknown') ? all : undefined;
    },
    'every rule evaluated once',
    15_000,
    250,
  );
  expect(rules.filter((x) => x.health !== 'ok').map((x) => `${x.name}: ${x.lastError ?? x.health}`)).toEqual([]);
  expect(rules.filter((x) => x.state !== 'inactive').map((x) => `${x.name}: ${x.state ?? ''}`)).toEqual([]);
}

describe.skipIf(missing)(
  missing ? `dashboard and alerts on a live Prometheus (skipped: ${missing})` : 'dashboard and alerts on a live Prometheus',
  () => {
    it('embedded: every dashboard query has data, every alert evaluates and stays quiet, /metrics passes promtool', async () => {
      const { cluster, prom } = await setUp(1);
      await generateTraffic(cluster);
      await expectEveryQueryAnswers(prom, cluster);
      // the unacknowledged SOS panel sees the two incidents nobody acknowledged; the alert compares it with the setting
      const waiting = await prom.query(
        grafanaExpr(dashboard.panels.find((p) => p.title === 'Unacknowledged SOS')?.targets?.[0]?.expr ?? ''),
      );
      expect(Number(waiting.data?.result[0]?.value?.[1])).toBeGreaterThan(0);
      const pageAfter = await prom.query(`max(vigil_incident_unacknowledged_page_after_seconds{job="${JOB}"})`);
      expect(Number(pageAfter.data?.result[0]?.value?.[1])).toBe(3600);
      // refused commands are counted by the error code the client received
      const reasons = await prom.query(`sum by (reason) (vigil_commands_total{job="${JOB}",outcome="refused"})`);
      const byReason = Object.fromEntries((reasons.data?.result ?? []).map((x) => [x.metric.reason, Number(x.value?.[1])]));
      expect(byReason).toMatchObject({ live_timer_exists: 3, timer_not_found: 1, unauthorized: 1 });
      expect((byReason.validation_failed ?? 0) + (byReason.out_of_range ?? 0)).toBe(1);
      // one SOS-to-SMS observation per contact texted
      const latency = await prom.query(`sum(vigil_sos_sms_latency_seconds_count{job="${JOB}"})`);
      expect(Number(latency.data?.result[0]?.value?.[1])).toBe(6);

      if (!promtoolMissing()) {
        const r = spawnSync(PROMTOOL, ['check', 'metrics'], { input: await cluster.metrics(0), encoding: 'utf8' });
        expect(`${r.stdout}${r.stderr}`.trim()).toBe('');
        expect(r.status).toBe(0);
      }
    });

    const hasRedis = redisAvailable();
    it.skipIf(!hasRedis)(
      hasRedis
        ? 'two replicas and a Redis lock, scraped as k8s/ deploys them (METRICS_PORT, METRICS_TOKEN): the same, and the lock holder shows by replica'
        : 'two replicas and a Redis lock (skipped: redis-server not installed)',
      async () => {
        const redis = await startRedis();
        cleanups.push(() => redis.stop());
        const { cluster, prom } = await setUp(2, redis, true);
        await generateTraffic(cluster);
        await expectEveryQueryAnswers(prom, cluster);
        // the lock-holder panel tells replicas apart: both report wins, contention shows
        const holder = dashboard.panels.find((p) => p.title.startsWith('Lock holder'))?.targets?.[0]?.expr ?? '';
        const byReplica = await prom.query(grafanaExpr(holder));
        expect(byReplica.data?.result.map((x) => x.metric.replica).sort()).toEqual([cluster.id(0), cluster.id(1)].sort());
        const contended = await prom.query(`sum(vigil_lock_acquisitions_total{job="${JOB}",result="contended"})`);
        expect(Number(contended.data?.result[0]?.value?.[1] ?? 0)).toBeGreaterThan(0);
      },
    );
  },
);
