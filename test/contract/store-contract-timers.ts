/** Contract cases for timers: arm, read, extend, resolve, sweep, escalation outbox. */
import { randomUUID } from 'node:crypto';
import { describe, expect } from 'vitest';
import { sweepSlot } from '../../src/domain/sweep-shard.js';
import type { Incident } from '../../src/domain/incident.js';
import type { Timer } from '../../src/domain/timer.js';
import { arm, armDue, at, newTimer, type ContractContext } from './store-contract-helpers.js';

const CAPS = { maxExtensions: 10, maxTotalSeconds: 7 * 86_400 };

export function timerCases(ctx: ContractContext): void {
  const it = ctx.it;
  describe('timers: arm and read', () => {
    it('keeps the time zone given at arm time, through the sweep that claims the timer', async () => {
      const store = ctx.store();
      const t = { ...(await newTimer(store, { startOffsetMs: -120_000, expiresInMs: -1_000 })), timeZone: 'America/Bogota' };
      const r = await store.armTimer(t);
      expect(r.kind === 'created' && r.timer.timeZone).toBe('America/Bogota');
      expect((await store.getTimer(t.id))?.timeZone).toBe('America/Bogota');
      const claimed = await store.claimDueTimers(1000, 1);
      expect(claimed.find((x) => x.id === t.id)?.timeZone).toBe('America/Bogota');
      const plain = await arm(store);
      expect(plain.timeZone).toBeUndefined();
    });

    it('armTimer creates an active timer with exactly the given fields', async () => {
      const store = ctx.store();
      const t = await newTimer(store, {
        locationName: 'Blue Bottle Café',
        location: { lat: 37.77493, lng: -122.41942 },
        displayName: 'Alice',
      });
      const r = await store.armTimer(t);
      expect(r.kind).toBe('created');
      if (r.kind !== 'created') return;
      expect(r.timer).toMatchObject({ ...t, status: 'active', extensions: 0, escalation: 'none' });
      expect(r.timer.resolvedAt).toBeUndefined();
      expect(r.timer.incidentId).toBeUndefined();
      expect(r.timer.updatedAt).toBeInstanceOf(Date);
      expect(await store.getTimer(t.id, t.userId)).toEqual(r.timer);
    });

    it('invariant 2: a second live timer for the same person → live_timer_exists with that timer', async () => {
      const store = ctx.store();
      const first = await arm(store);
      const second = await newTimer(store, { userId: first.userId });
      const r = await store.armTimer(second);
      expect(r).toEqual({ kind: 'live_timer_exists', timer: first });
      expect(await store.getTimer(second.id)).toBeNull();
    });

    it('invariant 2: once the live timer is resolved, safe or expired, a new one can be armed', async () => {
      const store = ctx.store();
      const first = await arm(store);
      await store.resolveTimer(first.id, first.userId, 'safe');
      const second = await arm(store, { userId: first.userId });
      const due = await armDue(store, randomUUID());
      await store.claimDueTimers(10, 1);
      const third = await arm(store, { userId: due.userId });
      expect([second.status, third.status]).toEqual(['active', 'active']);
    });

    it('invariant 6: same Idempotency-Key and fingerprint → replayed with the same timer', async () => {
      const store = ctx.store();
      const idem = { key: randomUUID(), fingerprint: 'f1' };
      const t = await newTimer(store);
      const first = await store.armTimer(t, idem);
      expect(first.kind).toBe('created');
      const again = await store.armTimer({ ...t, id: randomUUID() }, idem);
      expect(again.kind).toBe('replayed');
      if (again.kind === 'replayed') expect(again.timer.id).toBe(t.id);
      await store.resolveTimer(t.id, t.userId, 'safe');
      const later = await store.armTimer({ ...t, id: randomUUID() }, idem);
      expect(later).toMatchObject({ kind: 'replayed', timer: { id: t.id, status: 'safe' } });
    });

    it('same Idempotency-Key with another fingerprint → idempotency_mismatch, nothing created', async () => {
      const store = ctx.store();
      const t = await newTimer(store);
      const key = randomUUID();
      await store.armTimer(t, { key, fingerprint: 'f1' });
      await store.resolveTimer(t.id, t.userId, 'cancelled');
      const other = { ...t, id: randomUUID() };
      expect(await store.armTimer(other, { key, fingerprint: 'f2' })).toEqual({ kind: 'idempotency_mismatch' });
      expect(await store.getTimer(other.id)).toBeNull();
    });

    it('the same Idempotency-Key used by two people creates two independent timers', async () => {
      const store = ctx.store();
      const idem = { key: 'same-key', fingerprint: 'f1' };
      const a = await store.armTimer(await newTimer(store), idem);
      const b = await store.armTimer(await newTimer(store), idem);
      expect([a.kind, b.kind]).toEqual(['created', 'created']);
      if (a.kind === 'created' && b.kind === 'created') expect(a.timer.id).not.toBe(b.timer.id);
    });

    it('invariant 7: getTimer with another userId → null; without userId (moderator) → found', async () => {
      const store = ctx.store();
      const t = await arm(store);
      expect(await store.getTimer(t.id, randomUUID())).toBeNull();
      expect(await store.getTimer(t.id)).toEqual(t);
      expect(await store.getTimer(randomUUID())).toBeNull();
    });

    it('listTimers: only that person’s timers, newest first, filtered by status', async () => {
      const store = ctx.store();
      const userId = randomUUID();
      const oldest = await arm(store, { userId, startOffsetMs: -3000 });
      await store.resolveTimer(oldest.id, userId, 'safe');
      const middle = await arm(store, { userId, startOffsetMs: -2000 });
      await store.resolveTimer(middle.id, userId, 'cancelled');
      const newest = await arm(store, { userId, startOffsetMs: -1000 });
      await arm(store); // someone else
      expect((await store.listTimers(userId)).map((t) => t.id)).toEqual([newest.id, middle.id, oldest.id]);
      expect((await store.listTimers(userId, { status: 'safe' })).map((t) => t.id)).toEqual([oldest.id]);
      expect((await store.listTimers(userId, { status: 'active' })).map((t) => t.id)).toEqual([newest.id]);
      expect(await store.listTimers(userId, { status: 'expired' })).toEqual([]);
      expect(await store.listTimers(randomUUID())).toEqual([]);
    });

    it('listTimers since: only records updated strictly after `since`', async () => {
      const store = ctx.store();
      const userId = randomUUID();
      const a = await arm(store, { userId });
      const resolved = await store.resolveTimer(a.id, userId, 'safe');
      if (!resolved) throw new Error('resolve failed');
      await ctx.passTime(resolved.updatedAt);
      const b = await arm(store, { userId });
      expect((await store.listTimers(userId, { since: resolved.updatedAt })).map((t) => t.id)).toEqual([b.id]);
      const both = await store.listTimers(userId, { since: at(resolved.updatedAt, -1) });
      expect(both.map((t) => t.id).sort()).toEqual([a.id, b.id].sort());
      expect(await store.listTimers(userId, { since: b.updatedAt })).toEqual([]);
    });
  });

  describe('timers: extend (CAS live → extended)', () => {
    it('adds exactly the seconds to the deadline, status extended, extensions + 1', async () => {
      const store = ctx.store();
      const t = await arm(store);
      const once = await store.extendTimer(t.id, t.userId, 600, CAPS);
      expect(once).toMatchObject({ status: 'extended', extensions: 1, startedAt: t.startedAt, expiresAt: at(t.expiresAt, 600_000) });
      const twice = await store.extendTimer(t.id, t.userId, 60, CAPS);
      expect(twice).toMatchObject({ status: 'extended', extensions: 2, expiresAt: at(t.expiresAt, 660_000) });
      expect(await store.getTimer(t.id)).toEqual(twice);
    });

    it('refused after maxExtensions, deadline unchanged', async () => {
      const store = ctx.store();
      const t = await arm(store);
      const caps = { ...CAPS, maxExtensions: 2 };
      await store.extendTimer(t.id, t.userId, 60, caps);
      const second = await store.extendTimer(t.id, t.userId, 60, caps);
      expect(second?.extensions).toBe(2);
      expect(await store.extendTimer(t.id, t.userId, 60, caps)).toBeNull();
      expect(await store.getTimer(t.id)).toEqual(second);
    });

    it('refused when the span from start to the new deadline would exceed maxTotalSeconds; equal is allowed', async () => {
      const store = ctx.store();
      const t = await arm(store, { expiresInMs: 600_000 });
      const caps = { maxExtensions: 10, maxTotalSeconds: 1200 };
      expect(await store.extendTimer(t.id, t.userId, 601, caps)).toBeNull();
      expect(await store.getTimer(t.id)).toEqual(t);
      const ok = await store.extendTimer(t.id, t.userId, 600, caps);
      expect(ok?.expiresAt).toEqual(at(t.startedAt, 1_200_000));
      expect(await store.extendTimer(t.id, t.userId, 1, caps)).toBeNull();
    });

    it('refused once the deadline has passed (the sweep owns it now)', async () => {
      const store = ctx.store();
      const t = await armDue(store);
      expect(await store.extendTimer(t.id, t.userId, 600, CAPS)).toBeNull();
      expect(await store.getTimer(t.id)).toEqual(t);
    });

    it('invariant 7: refused for another user', async () => {
      const store = ctx.store();
      const t = await arm(store);
      expect(await store.extendTimer(t.id, randomUUID(), 600, CAPS)).toBeNull();
      expect(await store.getTimer(t.id)).toEqual(t);
    });

    it('invariant 6: refused on every terminal state', async () => {
      const store = ctx.store();
      const safe = await arm(store);
      await store.resolveTimer(safe.id, safe.userId, 'safe');
      const cancelled = await arm(store);
      await store.resolveTimer(cancelled.id, cancelled.userId, 'cancelled');
      const due = await armDue(store);
      await store.claimDueTimers(10, 1);
      for (const t of [safe, cancelled, due]) {
        const before = await store.getTimer(t.id);
        expect(await store.extendTimer(t.id, t.userId, 600, CAPS)).toBeNull();
        expect(await store.getTimer(t.id)).toEqual(before);
      }
    });
  });

  describe('timers: resolve (CAS live → safe | cancelled)', () => {
    for (const to of ['safe', 'cancelled'] as const) {
      it(`invariant 2: active and extended → ${to}; a second call loses the CAS (null) and changes nothing`, async () => {
        const store = ctx.store();
        const a = await arm(store);
        const b = await arm(store);
        await store.extendTimer(b.id, b.userId, 60, CAPS);
        for (const t of [a, b]) {
          const done = await store.resolveTimer(t.id, t.userId, to);
          expect(done).toMatchObject({ id: t.id, status: to });
          expect(done?.resolvedAt).toBeInstanceOf(Date);
          expect(await store.resolveTimer(t.id, t.userId, to)).toBeNull();
          expect(await store.resolveTimer(t.id, t.userId, to === 'safe' ? 'cancelled' : 'safe')).toBeNull();
          expect(await store.getTimer(t.id)).toEqual(done);
        }
      });
    }

    it('invariant 7: refused for another user', async () => {
      const store = ctx.store();
      const t = await arm(store);
      expect(await store.resolveTimer(t.id, randomUUID(), 'safe')).toBeNull();
      expect((await store.getTimer(t.id))?.status).toBe('active');
    });

    it('invariant 6: a safe timer is never expired by a sweep, even past its deadline', async () => {
      const store = ctx.store();
      const t = await armDue(store);
      const safe = await store.resolveTimer(t.id, t.userId, 'safe');
      expect(safe?.status).toBe('safe');
      expect(await store.claimDueTimers(100, 1)).toEqual([]);
      expect(await store.getTimer(t.id)).toEqual(safe);
      expect(await store.overdue()).toEqual({ count: 0 });
      expect(await store.pendingEscalations(100)).toEqual([]);
    });

    it('invariant 6: an expired timer cannot be resolved afterwards', async () => {
      const store = ctx.store();
      const t = await armDue(store);
      const [expired] = await store.claimDueTimers(10, 1);
      expect(await store.resolveTimer(t.id, t.userId, 'safe')).toBeNull();
      expect(await store.resolveTimer(t.id, t.userId, 'cancelled')).toBeNull();
      expect(await store.getTimer(t.id)).toEqual(expired);
    });
  });

  describe('timers: sweep (claimDueTimers) and escalation outbox', () => {
    it('invariant 4: claims only live timers due by the store clock → expired, escalation pending, stamped with the fence', async () => {
      const store = ctx.store();
      const due = [await armDue(store), await armDue(store)];
      // an extended timer whose new deadline passes is swept like an active one
      const soon = await arm(store, { startOffsetMs: -60_000, expiresInMs: 200 });
      const extended = await store.extendTimer(soon.id, soon.userId, 1, CAPS);
      if (!extended) throw new Error('extend failed');
      const future = await arm(store);
      const resolved = await armDue(store);
      await store.resolveTimer(resolved.id, resolved.userId, 'cancelled');

      const claimed = await store.claimDueTimers(100, 7);
      expect(claimed.map((t) => t.id).sort()).toEqual(due.map((t) => t.id).sort());
      for (const t of claimed) {
        expect(t).toMatchObject({ status: 'expired', escalation: 'pending', expiredByFence: 7 });
        expect(await store.getTimer(t.id)).toEqual(t);
      }
      expect(await store.claimDueTimers(100, 8)).toEqual([]);

      await ctx.passTime(extended.expiresAt);
      const late = await store.claimDueTimers(100, 9);
      expect(late).toHaveLength(1);
      expect(late[0]).toMatchObject({ id: extended.id, status: 'expired', escalation: 'pending', expiredByFence: 9, extensions: 1 });
      expect((await store.getTimer(future.id))?.status).toBe('active');
      expect((await store.getTimer(resolved.id))?.status).toBe('cancelled');
    });

    it('a timer is due once the store clock reaches its deadline; fence 0 (no lock) is recorded as 0', async () => {
      const store = ctx.store();
      const t = await arm(store, { startOffsetMs: -60_000, expiresInMs: 0 });
      const claimed = await store.claimDueTimers(10, 0);
      expect(claimed.map((c) => c.id)).toEqual([t.id]);
      expect(claimed[0]?.expiredByFence).toBe(0);
    });

    it('respects the limit', async () => {
      const store = ctx.store();
      for (let i = 0; i < 5; i++) await armDue(store);
      expect(await store.claimDueTimers(2, 1)).toHaveLength(2);
      expect(await store.claimDueTimers(10, 1)).toHaveLength(3);
      expect(await store.claimDueTimers(10, 1)).toHaveLength(0);
    });

    it('invariant 4: pendingEscalations lists expired+pending; markEscalated pending → done exactly once', async () => {
      const store = ctx.store();
      const older = await arm(store, { startOffsetMs: -120_000, expiresInMs: -5_000 });
      const newer = await armDue(store);
      await arm(store);
      await store.claimDueTimers(10, 1);
      expect((await store.pendingEscalations(10)).map((t) => t.id)).toEqual([older.id, newer.id]);
      const incidentId = randomUUID();
      expect(await store.markEscalated(older.id, incidentId)).toBe(true);
      expect(await store.markEscalated(older.id, randomUUID())).toBe(false);
      expect(await store.getTimer(older.id)).toMatchObject({ status: 'expired', escalation: 'done', incidentId });
      expect((await store.pendingEscalations(10)).map((t) => t.id)).toEqual([newer.id]);
      expect(await store.pendingEscalations(0)).toEqual([]);
    });

    it('invariant 4 with sweep shards: each due timer is claimed by the shard of its slot only, once, and repaired by that shard only', async () => {
      const store = ctx.store();
      const due: Timer[] = [];
      for (let i = 0; i < 24; i++) due.push(await armDue(store));
      const of = 3;
      const shardOf = (t: Timer) => sweepSlot(t.id) % of;
      // 24 random ids over 3 shards: every shard has some (else the case would prove less than it says)
      expect(new Set(due.map(shardOf)).size).toBe(of);
      const claimedBy = new Map<string, number>();
      for (let index = 0; index < of; index++) {
        const claimed = await store.claimDueTimers(100, 10 + index, 0, { index, of });
        for (const t of claimed) {
          expect(claimedBy.has(t.id)).toBe(false);
          claimedBy.set(t.id, index);
          expect(t).toMatchObject({ status: 'expired', escalation: 'pending', expiredByFence: 10 + index });
        }
        expect(await store.claimDueTimers(100, 20, 0, { index, of })).toEqual([]);
      }
      expect([...claimedBy.keys()].sort()).toEqual(due.map((t) => t.id).sort());
      for (const t of due) expect(claimedBy.get(t.id)).toBe(shardOf(t));
      for (let index = 0; index < of; index++) {
        const pending = await store.pendingEscalations(100, { index, of });
        expect(pending.map((t) => t.id).sort()).toEqual(
          due
            .filter((t) => shardOf(t) === index)
            .map((t) => t.id)
            .sort(),
        );
      }
      // one shard of one is every timer
      expect(await store.pendingEscalations(100, { index: 0, of: 1 })).toHaveLength(24);
    });

    it('overdue counts live timers past their deadline and reports the oldest deadline', async () => {
      const store = ctx.store();
      expect(await store.overdue()).toEqual({ count: 0 });
      const oldest = await arm(store, { startOffsetMs: -120_000, expiresInMs: -5_000 });
      await armDue(store);
      await arm(store);
      const resolved = await armDue(store);
      await store.resolveTimer(resolved.id, resolved.userId, 'safe');
      expect(await store.overdue()).toEqual({ count: 2, oldest: oldest.expiresAt });
      await store.claimDueTimers(10, 1);
      expect(await store.overdue()).toEqual({ count: 0 });
    });

    it('overdue with a grace counts only timers past their deadline plus the grace (a timer in its grace is not late)', async () => {
      const store = ctx.store();
      const late = await arm(store, { startOffsetMs: -120_000, expiresInMs: -60_000 });
      const inGrace = await arm(store, { startOffsetMs: -120_000, expiresInMs: -5_000 });
      expect(await store.overdue(30_000)).toEqual({ count: 1, oldest: late.expiresAt });
      expect(await store.overdue(120_000)).toEqual({ count: 0 });
      expect(await store.overdue(1_000)).toEqual({ count: 2, oldest: late.expiresAt });
      // the claim with the same grace leaves the same ones: overdue(grace) is what a sweep with that grace would claim
      expect((await store.claimDueTimers(10, 1, 30_000)).map((t) => t.id)).toEqual([late.id]);
      expect(await store.overdue(30_000)).toEqual({ count: 0 });
      expect(await store.overdue()).toEqual({ count: 1, oldest: inGrace.expiresAt });
    });

    it('maxRecordedFence is the highest fence in incidents and in timers still pending escalation (0 when none)', async () => {
      const store = ctx.store();
      expect(await store.maxRecordedFence()).toBe(0);
      const a = await armDue(store);
      await store.claimDueTimers(10, 7);
      expect(await store.maxRecordedFence()).toBe(7); // claimed, not escalated yet
      const [claimedA] = await store.pendingEscalations(10);
      await store.openIncident(claimedA!, 9, randomUUID());
      expect(await store.markEscalated(a.id, randomUUID())).toBe(true);
      expect(await store.maxRecordedFence()).toBe(9);
      await armDue(store);
      await store.claimDueTimers(10, 3); // a stale holder's lower fence does not lower the maximum
      expect(await store.maxRecordedFence()).toBe(9);
      await armDue(store);
      await store.claimDueTimers(10, 12);
      expect(await store.maxRecordedFence()).toBe(12);
    });

    it('countPendingEscalations counts every expired timer whose escalation is pending, beyond any page size', async () => {
      const store = ctx.store();
      expect(await store.countPendingEscalations()).toBe(0);
      const due = [];
      for (let i = 0; i < 3; i++) due.push(await armDue(store));
      await arm(store);
      expect(await store.countPendingEscalations()).toBe(0);
      await store.claimDueTimers(10, 1);
      expect(await store.countPendingEscalations()).toBe(3);
      expect(await store.markEscalated(due[0]!.id, randomUUID())).toBe(true);
      expect(await store.countPendingEscalations()).toBe(2);
    });

    it('stateCounts: live timers and open incidents by status; closed ones are not counted', async () => {
      const store = ctx.store();
      const caps = { maxExtensions: 10, maxTotalSeconds: 172_800 };
      const none = { timers: { active: 0, extended: 0 }, incidents: { active: 0, acknowledged: 0 } };
      expect(await store.stateCounts()).toEqual(none);
      const a = await arm(store);
      const b = await arm(store);
      await arm(store);
      expect(await store.extendTimer(b.id, b.userId, 60, caps)).not.toBeNull();
      expect(await store.resolveTimer(a.id, a.userId, 'safe')).not.toBeNull();
      const d1 = await armDue(store);
      await armDue(store);
      const claimed = await store.claimDueTimers(10, 1);
      expect(claimed.map((t) => t.id).sort()).toHaveLength(2);
      const incidents = [];
      for (const t of claimed) incidents.push((await store.openIncident(t, 1, randomUUID())).incident);
      const first = incidents.find((i) => i.timerId === d1.id)!;
      expect(await store.transitionIncident(first.id, ['active'], 'acknowledged', 'mod')).not.toBeNull();
      expect(await store.stateCounts()).toEqual({ timers: { active: 1, extended: 1 }, incidents: { active: 1, acknowledged: 1 } });
      expect(await store.transitionIncident(first.id, ['acknowledged'], 'resolved', 'mod')).not.toBeNull();
      expect((await store.stateCounts()).incidents).toEqual({ active: 1, acknowledged: 0 });
    });

    it('oldestUnacknowledged: when the oldest incident nobody acknowledged was opened; acknowledged and closed ones do not count', async () => {
      const store = ctx.store();
      expect(await store.oldestUnacknowledged()).toBeUndefined();
      await armDue(store);
      await armDue(store);
      const claimed = await store.claimDueTimers(10, 1);
      expect(claimed).toHaveLength(2);
      const opened = [];
      for (const t of claimed) opened.push((await store.openIncident(t, 1, randomUUID())).incident);
      opened.sort((x, y) => x.createdAt.getTime() - y.createdAt.getTime());
      const [older, newer] = opened as [Incident, Incident];
      expect((await store.oldestUnacknowledged())?.getTime()).toBe(older.createdAt.getTime());
      expect(await store.transitionIncident(older.id, ['active'], 'acknowledged', 'mod')).not.toBeNull();
      expect((await store.oldestUnacknowledged())?.getTime()).toBe(newer.createdAt.getTime());
      expect(await store.transitionIncident(newer.id, ['active'], 'resolved', 'mod')).not.toBeNull();
      expect(await store.oldestUnacknowledged()).toBeUndefined();
    });
  });
}
