/**
 * Contract cases for live location: the trail of flushed fixes (add, list, last), the
 * meeting stored on the timer and copied to its incident, and the `moved` follow-up kind
 * (claimed only after the contact's SOS, like the all-clear).
 */
import { randomUUID } from 'node:crypto';
import { describe, expect } from 'vitest';
import type { StoredFix } from '../../src/domain/location.js';
import { newDeliveries, newTimer, openedIncident, type ContractContext } from './store-contract-helpers.js';

const fix = (timerId: string, userId: string, atMs: number, lat = 52.52, lng = 13.405, accuracyM?: number): StoredFix => ({
  timerId,
  userId,
  at: new Date(atMs),
  lat,
  lng,
  ...(accuracyM === undefined ? {} : { accuracyM }),
});

export function locationCases(ctx: ContractContext): void {
  const it = ctx.it;
  describe('location', () => {
    it('the trail: fixes added once per (timer, fix time), listed oldest first, the last by fix time', async () => {
      const store = ctx.store();
      const timerId = randomUUID();
      const other = randomUUID();
      const t0 = (await store.now()).getTime() - 60_000;
      expect(await store.lastFix(timerId)).toBeNull();
      expect(await store.listFixes(timerId, 100)).toEqual([]);
      expect(await store.addFixes([])).toBe(0);

      const a = fix(timerId, 'u1', t0, 52.52, 13.405, 12.5);
      const b = fix(timerId, 'u1', t0 + 20_000, 52.53, 13.41);
      const c = fix(timerId, 'u1', t0 + 10_000, 52.525, 13.407);
      expect(await store.addFixes([a, b])).toBe(2);
      // a repeated flush (b again) stores nothing twice; c arrives late but sorts by its time
      expect(await store.addFixes([b, c, fix(other, 'u2', t0)])).toBe(2);

      const trail = await store.listFixes(timerId, 100);
      expect(trail).toEqual([a, c, b]);
      expect(trail[0]).toHaveProperty('accuracyM', 12.5);
      expect(trail[1]).not.toHaveProperty('accuracyM');
      expect(await store.lastFix(timerId)).toEqual(b);
      // a limited list keeps the latest fixes, still oldest first
      expect(await store.listFixes(timerId, 2)).toEqual([c, b]);
      expect(await store.listFixes(other, 100)).toHaveLength(1);
    });

    it('whom the person is meeting is stored on the timer and copied to its incident; absent when not given', async () => {
      const store = ctx.store();
      const meeting = { withUserId: 'user-bob', name: 'Bob', phone: '+14155550199' };
      const base = await newTimer(store, { startOffsetMs: -120_000, expiresInMs: -1_000 });
      const r = await store.armTimer({ ...base, meeting });
      expect(r.kind).toBe('created');
      if (r.kind !== 'created') return;
      expect(r.timer.meeting).toEqual(meeting);
      expect((await store.getTimer(base.id))?.meeting).toEqual(meeting);
      const claimed = (await store.claimDueTimers(1000, 1)).find((t) => t.id === base.id);
      expect(claimed?.meeting).toEqual(meeting);
      if (!claimed) return;
      const { incident } = await store.openIncident(claimed, 1, randomUUID());
      expect(incident.meeting).toEqual(meeting);
      expect((await store.getIncident(incident.id))?.meeting).toEqual(meeting);

      const { timer: plain, incident: plainIncident } = await openedIncident(store);
      expect(plain).not.toHaveProperty('meeting');
      expect(plainIncident).not.toHaveProperty('meeting');
      const partial = await store.armTimer({ ...(await newTimer(store)), meeting: { name: 'Carol' } });
      expect(partial.kind === 'created' && partial.timer.meeting).toEqual({ name: 'Carol' });
    });

    it('a moved follow-up is stored with its kind and is not claimed while the same contact’s SOS is pending', async () => {
      const store = ctx.store();
      const { incident } = await openedIncident(store);
      const [sos] = newDeliveries(incident.id, 1, 'sos');
      if (!sos) throw new Error('no delivery');
      const moved = { ...sos, key: `${incident.id}:${sos.contactId}:moved`, kind: 'moved' as const, body: 'moved' };
      const all = await store.addDeliveries(incident, [sos, moved]);
      expect(all.find((d) => d.key === moved.key)?.kind).toBe('moved');
      const first = await store.claimDeliveries(100, 60_000);
      expect(first.map((d) => d.key)).toContain(sos.key);
      expect(first.map((d) => d.key)).not.toContain(moved.key);
      const claimedSos = first.find((d) => d.key === sos.key);
      if (!claimedSos) return;
      await store.recordAttempt(sos.key, claimedSos.attempts, { status: 'sent', carrier: 'console', providerMessageId: 'p1' });
      const later = await store.claimDeliveries(100, 60_000);
      expect(later.map((d) => d.key)).toContain(moved.key);
    });
  });
}
