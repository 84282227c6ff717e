/**
 * Contract cases for how an SOS joins and ends (issue 35, items 1, 4, 5, 14): one open SOS per
 * person (a second escalation joins the open incident, in the single and the group path), panic
 * notes, closing texts owed by a resolve, and what the SMS caps count.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect } from 'vitest';
import { deliveryKey } from '../../src/domain/delivery.js';
import { MAX_PANIC_NOTES, OPEN_INCIDENT } from '../../src/domain/incident.js';
import type { NewDelivery } from '../../src/store/port.js';
import { arm, armDue, newDeliveries, openedIncident, raceIt, type ContractContext } from './store-contract-helpers.js';

const LEASE = 60_000;

export function sosCases(ctx: ContractContext): void {
  const it = ctx.it;
  describe('one open SOS per person', () => {
    it('invariant 3: a second timer of a person whose incident is open joins it (openIncident): linked, `timer` among the sources, no second incident', async () => {
      const store = ctx.store();
      const user = randomUUID();
      const { incident: first } = await openedIncident(store, { userId: user });
      await arm(store, { userId: user, startOffsetMs: -120_000, expiresInMs: -500 });
      const [second] = await store.claimDueTimers(10, 2);
      expect(second?.userId).toBe(user);
      const r = await store.openIncident(second!, 2, randomUUID());
      expect(r).toMatchObject({ created: false, joined: true, incident: { id: first.id, linkedTimers: [second!.id] } });
      expect(r.incident.sources ?? ['timer']).toContain('timer');
      // repeated (a repair): the same answer, listed once
      const again = await store.openIncident(second!, 2, randomUUID());
      expect(again.incident).toMatchObject({ id: first.id, linkedTimers: [second!.id] });
      expect(await store.incidentForTimer(second!.id)).toBeNull();
      expect((await store.listIncidents({ limit: 1000 })).filter((i) => i.userId === user)).toHaveLength(1);
      // once it is closed, the person's next SOS opens its own
      await store.transitionIncident(first.id, OPEN_INCIDENT, 'resolved', 'mod');
      const third = await armDue(store, user);
      const [claimed] = (await store.claimDueTimers(10, 3)).filter((t) => t.id === third.id);
      const opened = await store.openIncident(claimed!, 3, randomUUID());
      expect(opened).toMatchObject({ created: true, incident: { timerId: third.id } });
      expect(opened.joined).toBeUndefined();
    });

    it('invariant 3: the group commit joins the same way: one incident, the SOS keys of the open incident, nobody texted twice', async () => {
      const store = ctx.store();
      const user = randomUUID();
      const { incident: first } = await openedIncident(store, { userId: user });
      const [sos] = newDeliveries(first.id, 1) as [NewDelivery];
      await store.addDeliveries(first, [sos]);
      const other = await armDue(store);
      await arm(store, { userId: user, startOffsetMs: -120_000, expiresInMs: -500 });
      const claimed = await store.claimDueTimers(10, 2);
      const mine = claimed.find((t) => t.userId === user)!;
      const results = await store.escalateBatch(
        claimed.map((timer) => ({
          timer,
          fence: 2,
          incidentId: randomUUID(),
          recipients: [{ contactId: sos.contactId, contactName: 'Kim', phone: sos.phone, body: `SOS for ${timer.id}` }],
        })),
      );
      const joined = results.find((r) => r.timerId === mine.id)!;
      expect(joined).toMatchObject({ joined: true, created: false, marked: true, incident: { id: first.id, linkedTimers: [mine.id] } });
      expect(results.find((r) => r.timerId === other.id)).toMatchObject({ created: true });
      expect((await store.getTimer(mine.id))?.incidentId).toBe(first.id);
      // the joined escalation's text to the same contact is the open incident's: still one
      expect((await store.deliveriesFor([first.id])).map((d) => d.key)).toEqual([deliveryKey(first.id, sos.contactId, 'sos')]);
    });

    it('a panic that attaches links the live timer and keeps its note; a new panic keeps its note; notes stop at MAX_PANIC_NOTES', async () => {
      const store = ctx.store();
      const user = randomUUID();
      const { incident: open } = await openedIncident(store, { userId: user });
      const live = await arm(store, { userId: user });
      const r = await store.raisePanic({ incidentId: randomUUID(), userId: user, note: 'grey van' });
      expect(r).toMatchObject({ kind: 'attached', incident: { id: open.id, linkedTimers: [live.id] }, timer: { id: live.id } });
      if (r.kind !== 'attached') throw new Error(r.kind);
      expect(r.incident.panicNotes?.map((n) => n.text)).toEqual(['grey van']);
      for (let i = 0; i < MAX_PANIC_NOTES + 2; i++) await store.raisePanic({ incidentId: randomUUID(), userId: user, note: `n${i}` });
      expect((await store.getIncident(open.id))?.panicNotes).toHaveLength(MAX_PANIC_NOTES);

      const alone = randomUUID();
      const own = await store.raisePanic({ incidentId: randomUUID(), userId: alone, note: 'he has a knife' });
      expect(own).toMatchObject({ kind: 'created' });
      if (own.kind !== 'created') throw new Error(own.kind);
      expect(own.incident.panicNotes).toMatchObject([{ text: 'he has a knife' }]);
      expect((await store.getIncident(own.incident.id))?.panicNotes?.[0]?.at).toBeInstanceOf(Date);
    });
  });

  describe('one open SOS per person, raced', () => {
    raceIt(ctx)(
      'invariant 3: two sweepers escalating two expired timers of one person at once → one open incident, the other timer joined it (60 trials)',
      async () => {
        const store = ctx.store();
        const peer = await ctx.peer();
        const trials = 60;
        const wins = { here: 0, peer: 0 };
        for (let i = 0; i < trials; i++) {
          const user = randomUUID();
          // both expired with their escalation pending (one live timer at a time: armed and claimed in turn)
          await arm(store, { userId: user, startOffsetMs: -120_000, expiresInMs: -2_000 });
          const [t1] = await store.claimDueTimers(10, 1);
          await arm(store, { userId: user, startOffsetMs: -60_000, expiresInMs: -1_000 });
          const [t2] = await store.claimDueTimers(10, 1);
          expect([t1?.userId, t2?.userId]).toEqual([user, user]);
          await peer.race(() => store.openIncident(t1!, 1, randomUUID()).then(() => undefined), 'openIncident', {
            timer: t2!,
            fence: 1,
            times: 1,
          });
          const open = (await store.listIncidents({ limit: 10_000 })).filter((x) => x.userId === user && OPEN_INCIDENT.includes(x.status));
          expect(open, `trial ${i}: open incidents of one person`).toHaveLength(1);
          const owner = open[0]!;
          const other = owner.timerId === t1!.id ? t2! : t1!;
          expect(owner.linkedTimers, `trial ${i}: the other timer joined`).toEqual([other.id]);
          if (owner.timerId === t1!.id) wins.here++;
          else wins.peer++;
        }
        console.log(`[${ctx.name}] two escalations of one person, ${trials} trials: this side opened ${wins.here}, the peer ${wins.peer}`);
        if (peer.ownThread) {
          expect(wins.here).toBeGreaterThan(0);
          expect(wins.peer).toBeGreaterThan(0);
        }
      },
      120_000,
    );
  });

  describe('how an SOS ends', () => {
    it('a resolve with closing texts records the all-clear as owed in the same write; without, nothing; oweAllClear only after a silent resolve, once', async () => {
      const store = ctx.store();
      const { incident: a } = await openedIncident(store);
      const closing = await store.transitionIncident(a.id, OPEN_INCIDENT, 'resolved', 'mod', { closingTexts: true });
      expect(closing).toMatchObject({ status: 'resolved', allClear: 'pending', resolvedBy: 'mod' });
      expect((await store.pendingAllClears(100)).map((i) => i.id)).toContain(a.id);
      expect(await store.oweAllClear(a.id)).toBeNull();

      const { incident: b } = await openedIncident(store);
      const silent = await store.transitionIncident(b.id, OPEN_INCIDENT, 'resolved', 'mod');
      expect(silent?.allClear).toBeUndefined();
      expect(await store.oweAllClear(b.id)).toMatchObject({ id: b.id, status: 'resolved', allClear: 'pending' });
      expect(await store.oweAllClear(b.id)).toBeNull();

      const { incident: c } = await openedIncident(store);
      expect(await store.oweAllClear(c.id)).toBeNull(); // open: I'm safe makes it a false alarm instead
    });

    it('superseding an ended SOS takes its pending moved follow-ups too, never what is being sent or sent', async () => {
      const store = ctx.store();
      const { incident } = await openedIncident(store);
      const [a, b] = newDeliveries(incident.id, 2) as [NewDelivery, NewDelivery];
      await store.addDeliveries(incident, [a, b]);
      for (const d of await store.claimDeliveries(10, LEASE))
        await store.recordAttempt(d.key, d.attempts, { status: 'sent', carrier: 't', providerMessageId: `pm-${d.key}` });
      const moved = (d: NewDelivery): NewDelivery => ({
        ...d,
        key: deliveryKey(incident.id, d.contactId, 'moved'),
        kind: 'moved',
        body: 'moved',
      });
      await store.addDeliveries(incident, [moved(a), moved(b)]);
      const [sending] = await store.claimDeliveries(1, LEASE);
      const gone = await store.supersedePendingSos(incident.id);
      expect(gone.map((d) => d.key)).toEqual([moved(a), moved(b)].map((d) => d.key).filter((k) => k !== sending!.key));
      expect((await store.getDelivery(sending!.key))?.status).toBe('sending');
    });
  });

  describe('what the SMS caps count', () => {
    it('item 14: texts handed to a carrier or on their way count; texts superseded unsent and held ones do not; a held text is stored superseded with its reason and never claimed', async () => {
      const store = ctx.store();
      const user = randomUUID();
      const since = new Date(0);
      const { incident } = await openedIncident(store, { userId: user });
      const [a, b, c] = newDeliveries(incident.id, 3) as [NewDelivery, NewDelivery, NewDelivery];
      await store.addDeliveries(incident, [a, b]);
      expect(await store.countDeliveriesSince(user, since)).toBe(2); // on their way
      expect(await store.countDeliveriesSinceMany([user], since)).toEqual(new Map([[user, 2]]));
      const [claimed] = await store.claimDeliveries(1, LEASE);
      await store.recordAttempt(claimed!.key, claimed!.attempts, {
        status: 'pending',
        carrier: 't',
        error: 'timeout',
        nextAttemptAt: new Date(0),
        maybeAccepted: true,
      });
      await store.supersedePendingSos(incident.id); // both pending: one tried once (counts), one never tried (does not)
      expect(await store.countDeliveriesSince(user, since)).toBe(1);
      const held = { ...c, key: deliveryKey(incident.id, c.contactId, 'moved'), kind: 'moved' as const, held: 'held_per_day' };
      const [stored] = (await store.addDeliveries(incident, [held])).filter((d) => d.key === held.key);
      expect(stored).toMatchObject({ status: 'superseded', lastError: 'held_per_day', attempts: 0 });
      expect(await store.countDeliveriesSince(user, since)).toBe(1);
      expect((await store.claimDeliveries(10, LEASE)).map((d) => d.key)).not.toContain(held.key);
    });
  });
}
