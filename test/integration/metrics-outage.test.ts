/**
 * /metrics answers through a store outage: `vigil_store_up` drops to 0, the store-wide
 * gauges keep their last value, and the process, lock and loop metrics are all still there.
 */
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/metrics.js';
import { startTestVigil } from '../helpers/vigil.js';

/** The value of the one sample of `name` in a Prometheus text page (labels ignored). */
function sample(page: string, name: string): number | undefined {
  const line = page.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('metrics through a store outage', () => {
  it('with the store closed, GET /metrics answers 200 with vigil_store_up 0, the last store gauges, and the lock, loop and process metrics', async () => {
    // every scrape reads the store here (the cache of a read has its own test: metrics-access.test.ts)
    const v = await startTestVigil({ METRICS_STORE_CACHE_MS: '0' }, { manualTicks: true });
    try {
      const store = v.vigil.store;
      const now = await store.now();
      for (const user of ['u1', 'u2']) {
        const r = await store.armTimer({
          id: `t-${user}`,
          userId: user,
          startedAt: new Date(now.getTime() - 60_000),
          expiresAt: new Date(now.getTime() - 1),
        });
        expect(r.kind).toBe('created');
      }
      await store.claimDueTimers(10, 1); // two escalations pending

      const up = await fetch(`${v.url}/metrics`);
      expect(up.status).toBe(200);
      const before = await up.text();
      expect(sample(before, 'vigil_store_up')).toBe(1);
      expect(sample(before, 'vigil_escalations_pending')).toBe(2);

      await store.close();
      const down = await fetch(`${v.url}/metrics`);
      expect(down.status).toBe(200);
      const page = await down.text();
      expect(sample(page, 'vigil_store_up')).toBe(0);
      expect(sample(page, 'vigil_escalations_pending')).toBe(2); // last good value, not a gap
      for (const name of [
        'vigil_loop_errors_total',
        'vigil_lock_acquisitions_total',
        'vigil_lock_unavailable',
        'vigil_lock_holder',
        'vigil_sweeps_total',
        'vigil_process_cpu_user_seconds_total',
      ]) {
        expect(sample(page, name), name).toBeTypeOf('number');
      }
    } finally {
      await v.stop();
    }
  });

  it('a store that does not answer makes the scrape report vigil_store_up 0 after the timeout instead of hanging', async () => {
    const metrics = createMetrics({ replica: 't', collectDefault: false, storeTimeoutMs: 100 });
    const hang = () => new Promise<never>(() => {});
    metrics.observeStore({
      overdue: hang,
      countPendingEscalations: hang,
      failedEscalations: hang,
      stateCounts: hang,
      deliveryBacklog: hang,
      oldestUnacknowledged: hang,
      now: hang,
    });
    const page = await metrics.registry.metrics(); // would hang (test timeout) without the bound
    expect(sample(page, 'vigil_store_up')).toBe(0);
    expect(sample(page, 'vigil_loop_errors_total')).toBe(0);
  });

  it('one scrape reads the store once, whatever the number of store gauges', async () => {
    const metrics = createMetrics({ replica: 't', collectDefault: false });
    const calls = { overdue: 0, pending: 0, failed: 0, backlog: 0, unacknowledged: 0 };
    metrics.observeStore({
      overdue: async () => (calls.overdue++, { count: 4, oldest: new Date(Date.now() - 30_000) }),
      countPendingEscalations: async () => (calls.pending++, 1500),
      failedEscalations: async () => (calls.failed++, [{}, {}]),
      stateCounts: async () => ({ timers: { active: 7, extended: 2 }, incidents: { active: 3, acknowledged: 1 } }),
      deliveryBacklog: async () => (calls.backlog++, { pending: 3, dead: 1 }),
      oldestUnacknowledged: async () => (calls.unacknowledged++, new Date(Date.now() - 90_000)),
      now: async () => new Date(),
    });
    const page = await metrics.registry.metrics();
    expect(calls).toEqual({ overdue: 1, pending: 1, failed: 1, backlog: 1, unacknowledged: 1 });
    expect(sample(page, 'vigil_store_up')).toBe(1);
    expect(sample(page, 'vigil_escalations_pending')).toBe(1500); // a count, not a page of rows
    expect(sample(page, 'vigil_escalations_failed')).toBe(2);
    expect(page).toMatch(/^vigil_timers_live\{status="active"[^}]*\} 7$/m);
    expect(page).toMatch(/^vigil_timers_live\{status="extended"[^}]*\} 2$/m);
    expect(page).toMatch(/^vigil_incidents_open\{status="active"[^}]*\} 3$/m);
    expect(page).toMatch(/^vigil_incidents_open\{status="acknowledged"[^}]*\} 1$/m);
    expect(sample(page, 'vigil_timers_overdue')).toBe(4);
    expect(sample(page, 'vigil_timers_overdue_oldest_age_seconds')).toBeGreaterThanOrEqual(29);
    expect(sample(page, 'vigil_deliveries_dead')).toBe(1);
    expect(sample(page, 'vigil_incident_unacknowledged_oldest_age_seconds')).toBeGreaterThanOrEqual(89);
  });
});
