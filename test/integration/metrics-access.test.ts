/**
 * `/metrics` and `/readyz` under a flood and in front of the public (docs/security.md,
 * "Metrics and readiness"): a flood of scrapes or probes costs one store read per window, the
 * scrape can have a listener of its own (METRICS_PORT) and a bearer token (METRICS_TOKEN), and
 * `/readyz` says ready or not, nothing more.
 */
import client from 'prom-client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { storeMetrics, type StoreGauges } from '../../src/metrics/store.js';
import { startTestVigil, type TestVigil } from '../helpers/vigil.js';

const TOKEN = 'metrics-token-0123456789abcdef0123456789';

const running: TestVigil[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const v of running.splice(0)) await v.stop();
});
async function start(env: Record<string, string>): Promise<TestVigil> {
  const v = await startTestVigil(env, { manualTicks: true });
  running.push(v);
  return v;
}

/** The value of the one sample of `name` in a Prometheus text page (labels ignored). */
function sample(page: string, name: string): number | undefined {
  const line = page.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('a flood of scrapes and probes', () => {
  it('50 scrapes within METRICS_STORE_CACHE_MS read the store once; 50 probes of /readyz ping it once', async () => {
    const v = await start({ METRICS_STORE_CACHE_MS: '60000' });
    const counts = vi.spyOn(v.vigil.store, 'stateCounts');
    const ping = vi.spyOn(v.vigil.store, 'ping');
    const scrape = () => fetch(`${v.url}/metrics`).then(async (r) => ({ status: r.status, page: await r.text() }));
    const first = await scrape();
    expect(first.status).toBe(200);
    expect(sample(first.page, 'vigil_store_up')).toBe(1);
    const pages = [...(await Promise.all(Array.from({ length: 25 }, scrape)))];
    for (let i = 0; i < 24; i++) pages.push(await scrape());
    expect(pages.every((p) => p.status === 200 && sample(p.page, 'vigil_store_up') === 1)).toBe(true);
    expect(counts).toHaveBeenCalledTimes(1);

    const probes = await Promise.all(Array.from({ length: 50 }, () => fetch(`${v.url}/readyz`)));
    expect(probes.every((r) => r.status === 200)).toBe(true);
    // the probes share one check; a slow machine may need a second one after the first second
    expect(ping.mock.calls.length).toBeLessThanOrEqual(2);
  });

  it('the cache keeps the outcome of a read, the store being down included, for its window and no longer', async () => {
    let t = 0;
    let reads = 0;
    let down = false;
    const answer = async <T>(v: T): Promise<T> => {
      if (down) throw new Error('store down');
      return v;
    };
    const gauges: StoreGauges = {
      overdue: () => answer({ count: 0 }),
      countPendingEscalations: () => (reads++, answer(3)),
      failedEscalations: () => answer([]),
      stateCounts: () => answer({ timers: { active: 0, extended: 0 }, incidents: { active: 0, acknowledged: 0 } }),
      deliveryBacklog: () => answer({ pending: 0, dead: 0 }),
      oldestUnacknowledged: () => answer(undefined),
      now: () => answer(new Date()),
    };
    const registry = new client.Registry();
    storeMetrics([registry], { cacheMs: 1000, now: () => t }).observeStore(gauges);
    const up = async () => sample(await registry.metrics(), 'vigil_store_up');

    expect(await up()).toBe(1);
    t = 999;
    down = true;
    for (let i = 0; i < 10; i++) expect(await up()).toBe(1);
    expect(reads).toBe(1);
    t = 1000;
    expect(await up()).toBe(0);
    expect(reads).toBe(2);
    t = 1999;
    down = false;
    expect(await up()).toBe(0); // a failed read is kept too: a flood during an outage waits for nobody
    expect(reads).toBe(2);
    t = 2000;
    expect(await up()).toBe(1);
    expect(sample(await registry.metrics(), 'vigil_escalations_pending')).toBe(3);
    expect(reads).toBe(3);
  });
});

describe('who may read them', () => {
  it('/readyz answers ready or not, and reveals nothing else', async () => {
    const v = await start({});
    const r = await fetch(`${v.url}/readyz`);
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ status: 'ready' });
  });

  it('METRICS_PORT: /metrics on its own listener (with METRICS_TOKEN), gone from the main port, closed on stop', async () => {
    const v = await start({ METRICS_PORT: '0', METRICS_TOKEN: TOKEN });
    const port = v.vigil.metricsPort;
    expect(port).toBeTypeOf('number');
    expect(port).not.toBe(v.vigil.port);
    const metricsUrl = `http://127.0.0.1:${String(port)}`;

    const main = await fetch(`${v.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(main.status).toBe(404);
    expect(((await main.json()) as { error: { code: string } }).error.code).toBe('route_not_found');

    const anonymous = await fetch(`${metricsUrl}/metrics`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(((await anonymous.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
    const person = await fetch(`${metricsUrl}/metrics`, { headers: { authorization: `Bearer ${v.token('someone', { admin: true })}` } });
    expect(person.status).toBe(401);
    const scraped = await fetch(`${metricsUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(scraped.status).toBe(200);
    expect(sample(await scraped.text(), 'vigil_store_up')).toBe(1);
    // nothing else is served there
    for (const path of ['/readyz', '/v1/timers', '/metrics/x']) expect((await fetch(`${metricsUrl}${path}`)).status).toBe(404);

    await v.vigil.stop();
    await expect(fetch(`${metricsUrl}/metrics`)).rejects.toThrow();
  });

  it('METRICS_TOKEN without METRICS_PORT: the main port asks for it', async () => {
    const v = await start({ METRICS_TOKEN: TOKEN });
    expect((await fetch(`${v.url}/metrics`)).status).toBe(401);
    expect((await fetch(`${v.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}x` } })).status).toBe(401);
    const ok = await fetch(`${v.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('vigil_store_up');
  });
});
