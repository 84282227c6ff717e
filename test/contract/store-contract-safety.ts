/** Contract cases of the safety features: panic SOS, the warning claim, the inbox. */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { incidentSources, OPEN_INCIDENT } from '../../src/domain/incident.js';
import type { NewNotification } from '../../src/domain/notification.js';
import type { Store } from '../../src/store/port.js';
import { arm, armDue, countBy, openedIncident, type ContractContext } from './store-contract-helpers.js';

const caps = { maxExtensions: 10, maxTotalSeconds: 86_400 };
const W = { beforeMs: 120_000, graceMs: 0 };

const note = (userId: string, key: string): NewNotification => ({
  id: `ntf_${randomUUID()}`,
  userId,
  key,
  kind: 'timer_warning',
  title: `title ${key}`,
  body: `body ${key}`,
});

const openOf = async (store: Store, userId: string) =>
  (await store.listIncidents()).filter((i) => i.userId === userId && OPEN_INCIDENT.includes(i.status));

export function safetyCases(ctx: ContractContext): void {
  const it_ = ctx.it;

  describe('panic', () => {
    it_('with nothing open: a panic incident of its own (no timer), the panic location; a second press attaches', async () => {
      const store = ctx.store();
      const userId = randomUUID();
      const id = randomUUID();
      const r = await store.raisePanic({
        incidentId: id,
        userId,
        displayName: 'Ann',
        locationName: 'Pier 39',
        location: { lat: 37.8, lng: -122.4 },
      });
      expect(r.kind).toBe('created');
      if (r.kind !== 'created') return;
      expect(r.timer).toBeUndefined();
      expect(r.incident).toMatchObject({ id, userId, status: 'active', sources: ['panic'], displayName: 'Ann', locationName: 'Pier 39' });
      expect(r.incident.location).toEqual({ lat: 37.8, lng: -122.4 });
      expect(await store.getIncident(id)).toEqual(r.incident);
      // invariant 4: the incident is the outbox of its texts until they are queued
      expect(r.incident.panicTexts).toBe('pending');
      expect((await store.pendingPanicTexts(100)).map((i) => i.id)).toContain(id);
      expect(await store.markPanicTexted(id)).toBe(true);
      expect(await store.markPanicTexted(id)).toBe(false);
      expect((await store.pendingPanicTexts(100)).map((i) => i.id)).not.toContain(id);
      expect((await store.getIncident(id))?.panicTexts).toBe('done');
      const again = await store.raisePanic({ incidentId: randomUUID(), userId });
      expect(again).toMatchObject({ kind: 'attached', sourceAdded: false, incident: { id } });
      expect(await openOf(store, userId)).toHaveLength(1);
    });

    it_(
      'takes over the live timer: expired with its escalation pending, the incident is that timer’s; the sweep cannot open another',
      async () => {
        const store = ctx.store();
        const t = await arm(store, { locationName: 'Blue Bottle', location: { lat: 1, lng: 2 } });
        const r = await store.raisePanic({ incidentId: randomUUID(), userId: t.userId });
        expect(r.kind).toBe('created');
        if (r.kind !== 'created' || !r.timer) throw new Error('no timer taken over');
        expect(r.timer).toMatchObject({ id: t.id, status: 'expired', escalation: 'pending' });
        expect(r.incident).toMatchObject({ timerId: t.id, sources: ['panic'], locationName: 'Blue Bottle', location: { lat: 1, lng: 2 } });
        // the timer's pending escalation is the outbox here
        expect(r.incident.panicTexts).toBeUndefined();
        expect(await store.pendingEscalations(100)).toEqual([r.timer]);
        expect(await store.claimDueTimers(100, 1)).toEqual([]);
        expect(await store.openIncident(r.timer, 1, randomUUID())).toEqual({ incident: r.incident, created: false });
        expect(await store.resolveTimer(t.id, t.userId, 'safe')).toBeNull();
      },
    );

    it_(
      'a duress SOS (source duress): its own incident, or `duress` added once to the open one; still one open SOS per person',
      async () => {
        const store = ctx.store();
        const userId = randomUUID();
        const id = `drs_${randomUUID()}`;
        const r = await store.raisePanic({ incidentId: id, userId, locationName: 'Pier 39', source: 'duress' });
        expect(r).toMatchObject({ kind: 'created', incident: { id, sources: ['duress'], panicTexts: 'pending', status: 'active' } });
        // a panic press afterwards joins it
        expect(await store.raisePanic({ incidentId: randomUUID(), userId })).toMatchObject({
          kind: 'attached',
          sourceAdded: true,
          incident: { id, sources: ['duress', 'panic'] },
        });
        // on a timer's open incident, duress is added once
        const { incident } = await openedIncident(store);
        const once = await store.raisePanic({ incidentId: `drs_${randomUUID()}`, userId: incident.userId, source: 'duress' });
        expect(once).toMatchObject({ kind: 'attached', sourceAdded: true, incident: { id: incident.id, sources: ['timer', 'duress'] } });
        const twice = await store.raisePanic({ incidentId: `drs_${randomUUID()}`, userId: incident.userId, source: 'duress' });
        expect(twice).toMatchObject({ kind: 'attached', sourceAdded: false, incident: { sources: ['timer', 'duress'] } });
        expect(await openOf(store, userId)).toHaveLength(1);
        expect(await openOf(store, incident.userId)).toHaveLength(1);
      },
    );

    it_('after the sweep expired the timer but before its incident: the incident is opened for that timer', async () => {
      const store = ctx.store();
      const t = await armDue(store);
      const [claimed] = await store.claimDueTimers(100, 3);
      expect(claimed?.id).toBe(t.id);
      const r = await store.raisePanic({ incidentId: randomUUID(), userId: t.userId });
      expect(r).toMatchObject({ kind: 'created', incident: { timerId: t.id, sources: ['panic'] }, timer: { id: t.id } });
      const swept = await store.openIncident(claimed!, 3, randomUUID());
      expect(swept.created).toBe(false);
      expect(swept.incident.id).toBe(r.kind === 'created' ? r.incident.id : '');
    });

    it_(
      'with an open timer incident: attaches, `panic` added once to its sources; a live timer of the person is linked and ended',
      async () => {
        const store = ctx.store();
        const { incident } = await openedIncident(store);
        expect(incidentSources(incident)).toEqual(['timer']);
        const live = await arm(store, { userId: incident.userId });
        const r = await store.raisePanic({ incidentId: randomUUID(), userId: incident.userId });
        expect(r).toMatchObject({ kind: 'attached', sourceAdded: true, incident: { id: incident.id, sources: ['timer', 'panic'] } });
        if (r.kind !== 'attached') return;
        expect(r.incident.updatedAt.getTime()).toBeGreaterThanOrEqual(incident.updatedAt.getTime());
        expect(r.timer).toMatchObject({ id: live.id, status: 'expired', escalation: 'done', incidentId: incident.id });
        expect(await store.claimDueTimers(100, 1)).toEqual([]);
        const twice = await store.raisePanic({ incidentId: randomUUID(), userId: incident.userId });
        expect(twice).toMatchObject({ kind: 'attached', sourceAdded: false, incident: { sources: ['timer', 'panic'] } });
        expect(await openOf(store, incident.userId)).toHaveLength(1);
      },
    );

    it_('Idempotency-Key: the same key replays the incident; another body with it is refused', async () => {
      const store = ctx.store();
      const userId = randomUUID();
      const idem = { key: 'sos-1', fingerprint: 'a' };
      const r = await store.raisePanic({ incidentId: randomUUID(), userId }, idem);
      expect(r.kind).toBe('created');
      const again = await store.raisePanic({ incidentId: randomUUID(), userId }, idem);
      expect(again).toMatchObject({ kind: 'replayed', incident: { id: r.kind === 'created' ? r.incident.id : '' } });
      expect(await store.raisePanic({ incidentId: randomUUID(), userId }, { key: 'sos-1', fingerprint: 'b' })).toEqual({
        kind: 'idempotency_mismatch',
      });
      // keys are per person
      expect((await store.raisePanic({ incidentId: randomUUID(), userId: randomUUID() }, idem)).kind).toBe('created');
    });

    it_('a closed incident frees the person: the next press opens a new one', async () => {
      const store = ctx.store();
      const userId = randomUUID();
      const first = await store.raisePanic({ incidentId: randomUUID(), userId });
      if (first.kind !== 'created') throw new Error(first.kind);
      expect(await store.transitionIncident(first.incident.id, OPEN_INCIDENT, 'resolved', 'mod')).not.toBeNull();
      const next = await store.raisePanic({ incidentId: randomUUID(), userId });
      expect(next.kind).toBe('created');
      expect(await openOf(store, userId)).toHaveLength(1);
    });
  });

  describe('warnings', () => {
    it_('claims a live timer in the window once, with its inbox entry; outside the window, too short or not live: never', async () => {
      const store = ctx.store();
      const inWindow = await arm(store, { startOffsetMs: -600_000, expiresInMs: 60_000 });
      await arm(store, { startOffsetMs: -600_000, expiresInMs: 600_000 }); // too early
      await arm(store, { startOffsetMs: -10_000, expiresInMs: 60_000 }); // shorter than the lead
      const ended = await arm(store, { startOffsetMs: -600_000, expiresInMs: 60_000 });
      await store.resolveTimer(ended.id, ended.userId, 'safe');
      await armDue(store); // past the deadline, no grace
      const first = await store.claimWarnings(100, W);
      expect(first.map((w) => w.timer.id)).toEqual([inWindow.id]);
      expect(first[0]?.timer.warnedAt).toBeInstanceOf(Date);
      expect(first[0]?.notification).toMatchObject({
        userId: inWindow.userId,
        key: `warning:${inWindow.id}:0`,
        kind: 'timer_warning',
        timerId: inWindow.id,
      });
      expect(await store.claimWarnings(100, W)).toEqual([]);
      expect(await store.claimWarnings(100, { beforeMs: 0, graceMs: 0 })).toEqual([]);
      expect((await store.listNotifications(inWindow.userId)).map((n) => n.key)).toEqual([`warning:${inWindow.id}:0`]);
    });

    it_('an extension clears the stamp: the new deadline warns again (key :1)', async () => {
      const store = ctx.store();
      const t = await arm(store, { startOffsetMs: -600_000, expiresInMs: 60_000 });
      expect(await store.claimWarnings(100, W)).toHaveLength(1);
      const ext = await store.extendTimer(t.id, t.userId, 30, caps);
      expect(ext?.warnedAt).toBeUndefined();
      const again = await store.claimWarnings(100, W);
      expect(again.map((w) => w.notification?.key)).toEqual([`warning:${t.id}:1`]);
    });

    it_('grace: a timer past its deadline is warned and not claimed by the sweep until the grace has passed', async () => {
      const store = ctx.store();
      const t = await arm(store, { startOffsetMs: -600_000, expiresInMs: -1_000 });
      const grace = { beforeMs: 120_000, graceMs: 60_000 };
      expect((await store.claimWarnings(100, grace)).map((w) => w.timer.id)).toEqual([t.id]);
      expect(await store.claimDueTimers(100, 1, 60_000)).toEqual([]);
      expect((await store.claimDueTimers(100, 1, 0)).map((x) => x.id)).toEqual([t.id]);
    });
  });

  describe('notifications', () => {
    it_('addNotifications: one write for several, in order; a key already recorded or repeated in the list is created once', async () => {
      const store = ctx.store();
      const userId = randomUUID();
      const first = await store.addNotification(note(userId, 'b0'));
      const out = await store.addNotifications([note(userId, 'b1'), note(userId, 'b0'), note(userId, 'b2'), note(userId, 'b1')]);
      expect(out.map((o) => o.created)).toEqual([true, false, true, false]);
      expect(out[1]?.notification).toEqual(first.notification);
      expect(out[3]?.notification).toEqual(out[0]?.notification);
      expect(out.map((o) => o.notification.key)).toEqual(['b1', 'b0', 'b2', 'b1']);
      expect((await store.listNotifications(userId)).map((n) => n.key).sort()).toEqual(['b0', 'b1', 'b2']);
      expect(await store.addNotifications([])).toEqual([]);
    });

    it_(
      'one per fact: the same key again returns the first; newest first, paged by (createdAt, id); unread; read; read-all; only the owner',
      async () => {
        const store = ctx.store();
        const userId = randomUUID();
        const a = await store.addNotification(note(userId, 'k1'));
        expect(a.created).toBe(true);
        const dup = await store.addNotification({ ...note(userId, 'k1'), title: 'other' });
        expect(dup).toEqual({ notification: a.notification, created: false });
        for (const k of ['k2', 'k3', 'k4', 'k5']) await store.addNotification(note(userId, k));
        await store.addNotification(note(randomUUID(), 'k1'));
        const all = await store.listNotifications(userId);
        expect(all).toHaveLength(5);
        const order = [...all].sort((x, y) => y.createdAt.getTime() - x.createdAt.getTime() || (y.id < x.id ? -1 : y.id > x.id ? 1 : 0));
        expect(all).toEqual(order);
        const page1 = await store.listNotifications(userId, { limit: 2 });
        const last = page1.at(-1)!;
        const page2 = await store.listNotifications(userId, { limit: 2, before: { createdAt: last.createdAt, id: last.id } });
        const last2 = page2.at(-1)!;
        const page3 = await store.listNotifications(userId, { limit: 2, before: { createdAt: last2.createdAt, id: last2.id } });
        expect([...page1, ...page2, ...page3].map((n) => n.id)).toEqual(all.map((n) => n.id));

        const read = await store.markNotificationRead(userId, a.notification.id);
        expect(read?.readAt).toBeInstanceOf(Date);
        expect(await store.markNotificationRead(userId, a.notification.id)).toEqual(read);
        expect(await store.markNotificationRead(randomUUID(), a.notification.id)).toBeNull();
        expect(await store.markNotificationRead(userId, 'ntf_missing')).toBeNull();
        expect((await store.listNotifications(userId, { unread: true })).map((n) => n.key).sort()).toEqual(['k2', 'k3', 'k4', 'k5']);
        expect(await store.markAllNotificationsRead(userId)).toBe(4);
        expect(await store.markAllNotificationsRead(userId)).toBe(0);
        expect(await store.listNotifications(userId, { unread: true })).toEqual([]);
      },
    );
  });

  const reason = ctx.opts.racesUnsupported;
  const itRaces = (title: string, fn: () => Promise<void>, timeoutMs?: number) =>
    reason ? it.skip(`[skipped on ${ctx.name}: ${reason}] ${title}`, fn) : it(title, fn, timeoutMs);

  describe('races', () => {
    itRaces(
      'two sweepers claim warnings at once → each timer warned exactly once, one inbox entry each (20 rounds × 20 timers)',
      async () => {
        const store = ctx.store();
        const peer = await ctx.peer();
        let mineWon = 0;
        let theirsWon = 0;
        for (let round = 0; round < 20; round++) {
          const timers = await Promise.all(Array.from({ length: 20 }, () => arm(store, { startOffsetMs: -600_000, expiresInMs: 60_000 })));
          const claimAll = async (claim: () => Promise<string[]>) => {
            const ids: string[] = [];
            for (let i = 0; i < 20; i++) {
              const got = await claim();
              ids.push(...got);
              if (got.length === 0) break;
            }
            return ids;
          };
          const [mine, theirs] = await peer.race(
            () => claimAll(async () => (await store.claimWarnings(3, W)).map((w) => w.timer.id)),
            'claimWarnings',
            { limit: 20, beforeMs: W.beforeMs },
          );
          const all = [...mine, ...theirs];
          expect(new Set(all).size, `round ${round}: a timer warned twice`).toBe(all.length);
          expect(new Set(all)).toEqual(new Set(timers.map((t) => t.id)));
          for (const t of timers) expect(await store.listNotifications(t.userId)).toHaveLength(1);
          mineWon += mine.length;
          theirsWon += theirs.length;
        }
        console.log(`[${ctx.name}] warning claims at once, 400 timers: this side warned ${mineWon}, the peer ${theirsWon}`);
        if (peer.ownThread) {
          expect(mineWon).toBeGreaterThan(0);
          expect(theirsWon).toBeGreaterThan(0);
        }
      },
      120_000,
    );

    itRaces(
      'panic vs the sweep of the same person’s due timer → exactly one open incident (60 trials)',
      async () => {
        const store = ctx.store();
        const peer = await ctx.peer();
        const trials = 60;
        let panicFirst = 0;
        let sweepFirst = 0;
        for (let i = 0; i < trials; i++) {
          const t = await armDue(store);
          await peer.race(
            async () => {
              for (const c of await store.claimDueTimers(10, 7)) await store.openIncident(c, 7, randomUUID());
            },
            'panic',
            { userId: t.userId },
          );
          const open = await openOf(store, t.userId);
          expect(open, `trial ${i}: open incidents of one person`).toHaveLength(1);
          expect(open[0]?.timerId).toBe(t.id);
          if (incidentSources(open[0]!)[0] === 'panic') panicFirst++;
          else sweepFirst++;
        }
        const all = await store.listIncidents();
        expect([...countBy(all, (x) => x.userId).values()].every((n) => n === 1)).toBe(true);
        console.log(`[${ctx.name}] panic vs sweep, ${trials} trials: panic opened ${panicFirst}, the sweep ${sweepFirst}`);
        if (peer.ownThread) {
          expect(panicFirst).toBeGreaterThan(0);
          expect(sweepFirst).toBeGreaterThan(0);
        }
      },
      120_000,
    );
  });
}
