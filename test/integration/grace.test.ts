/**
 * GRACE_SECONDS moves when a timer is due: its deadline plus the grace. The scheduler wakes
 * then (not at the bare deadline, where the claim finds nothing and would be retried every
 * few ms for the whole grace, the lease kept), and a timer in its grace is not overdue:
 * `vigil_timers_overdue*` (and the VigilTimersOverdue alert on them) count only timers past
 * deadline + grace, and the queue age runs from then.
 */
import { describe, expect, it } from 'vitest';
import { createMetrics, type Metrics } from '../../src/metrics.js';
import { tempSqliteStore } from '../helpers/sqlite-store.js';
import { eventually, startTestVigil, untilPast } from '../helpers/vigil.js';

const GRACE_S = 2;

/** The value of an unlabelled (but for `replica`) gauge or the sum of a counter's series. */
async function sample(metrics: Metrics, name: string): Promise<number> {
  const text = await metrics.registry.metrics();
  return [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))].reduce((n, m) => n + Number(m[1]), 0);
}

describe('GRACE_SECONDS: due at deadline + grace', () => {
  it('the replica wakes when the timer is due, not at its deadline: a handful of sweeps across the grace, the lease not kept through it', async () => {
    const v = await startTestVigil({ SWEEP_CRON: '*/30 * * * * *', GRACE_SECONDS: String(GRACE_S), WARNING_BEFORE_SECONDS: '0' });
    try {
      const { metrics, store, sweeper } = v.vigil;
      // the start-up sweep is done (it ran at once, then planned nothing closer than the lease)
      await eventually(async () => (await sample(metrics, 'vigil_sweeps_total')) >= 1, 'the start-up sweep');
      const tok = v.token('grace-wake');
      const armed = await v.api(tok, 'POST', '/v1/timers', { durationSeconds: 1 });
      expect(armed.status).toBe(201);
      const before = await sample(metrics, 'vigil_sweeps_total');
      const expiresAt = new Date(armed.body.timer.expiresAt as string);

      // in the grace: past the deadline, not due
      await untilPast(new Date(expiresAt.getTime() + 300));
      expect(sweeper.keptLeases()).toEqual([]);
      expect(await sample(metrics, 'vigil_timers_overdue')).toBe(0);

      const incident = await eventually(() => store.incidentForTimer(armed.body.timer.id as string), 'the incident', 45_000);
      expect(incident.createdAt.getTime()).toBeGreaterThanOrEqual(expiresAt.getTime() + GRACE_S * 1000);
      // woken once at deadline + grace (a cron tick or a lease-long re-read may add one or two);
      // at the bare deadline it would have swept every 20 ms for the whole grace (about 100)
      expect((await sample(metrics, 'vigil_sweeps_total')) - before).toBeLessThanOrEqual(4);
    } finally {
      await v.stop();
    }
  });

  it('vigil_timers_overdue counts only timers past deadline + grace; the queue age runs from deadline + grace', async () => {
    const t = Date.parse('2025-03-01T10:00:00.000Z');
    const { store, cleanup } = await tempSqliteStore({ clock: () => t });
    try {
      for (const [id, pastMs] of [
        ['late', 90_000],
        ['in-grace', 20_000],
      ] as const) {
        const r = await store.armTimer({ id, userId: id, startedAt: new Date(t - 600_000), expiresAt: new Date(t - pastMs) });
        expect(r.kind).toBe('created');
      }
      const gauges = async (graceMs?: number) => {
        const metrics = createMetrics({ replica: 'grace', collectDefault: false });
        metrics.observeStore(store, graceMs === undefined ? {} : { graceMs });
        return [await sample(metrics, 'vigil_timers_overdue'), await sample(metrics, 'vigil_timers_overdue_oldest_age_seconds')];
      };
      expect(await gauges()).toEqual([2, 90]);
      expect(await gauges(30_000)).toEqual([1, 60]);
      expect(await gauges(120_000)).toEqual([0, 0]);
    } finally {
      await cleanup();
    }
  });
});
