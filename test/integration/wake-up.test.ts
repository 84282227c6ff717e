/**
 * Precise wake-ups: the cron tick is only the heartbeat. A timer escalates at its deadline,
 * long before the next tick of a slow cron (`*\/30 * * * * *`: seconds 0 and 30 of each
 * minute) — whether it was armed on this replica (the wake-up moves earlier at once) or
 * written by someone else (seen when the scheduler re-reads the next deadline, at the
 * latest one lock lease after its last sweep).
 */
import { describe, expect, it } from 'vitest';
import { eventually, startTestVigil } from '../helpers/vigil.js';

const EVERY_S = 30;
const SWEEP_CRON = `*/${EVERY_S} * * * * *`;

/** The first tick of SWEEP_CRON strictly after `t`: nothing the cron runs can happen before it. */
const nextTickAfter = (t: Date): number => (Math.floor(t.getTime() / (EVERY_S * 1000)) + 1) * EVERY_S * 1000;

describe('precise wake-ups', () => {
  it('a timer armed here escalates at its deadline, before the next cron tick could have run', async () => {
    const v = await startTestVigil({ SWEEP_CRON });
    try {
      const tok = v.token('wake-armed');
      await v.api(tok, 'PUT', '/v1/me/contacts', { contacts: [{ name: 'A', phone: '+14155550100' }] });
      const armed = await v.api(tok, 'POST', '/v1/timers', { durationSeconds: 1 });
      expect(armed.status).toBe(201);
      const expiresAt = new Date(armed.body.timer.expiresAt as string);
      const incident = await eventually(() => v.vigil.store.incidentForTimer(armed.body.timer.id as string), 'the incident', 45_000);
      expect(incident.createdAt.getTime()).toBeGreaterThanOrEqual(expiresAt.getTime());
      expect(incident.createdAt.getTime()).toBeLessThan(nextTickAfter(expiresAt));
    } finally {
      await v.stop();
    }
  });

  it('a timer written by another replica (straight into the store) escalates within a lease of its deadline, before the next tick', async () => {
    const v = await startTestVigil({ SWEEP_CRON, LOCK_TTL_MS: '2000' });
    try {
      const store = v.vigil.store;
      const now = await store.now();
      const r = await store.armTimer({
        id: 'wake-foreign',
        userId: 'wake-foreign',
        startedAt: now,
        expiresAt: new Date(now.getTime() + 1300),
      });
      if (r.kind !== 'created') throw new Error(r.kind);
      const incident = await eventually(() => store.incidentForTimer('wake-foreign'), 'the incident', 45_000);
      expect(incident.createdAt.getTime()).toBeGreaterThanOrEqual(r.timer.expiresAt.getTime());
      expect(incident.createdAt.getTime()).toBeLessThan(nextTickAfter(r.timer.expiresAt));
    } finally {
      await v.stop();
    }
  });
});
