/** Contract cases for moderator actions (resend, cancel, notes, audit) and retention. */
import { randomUUID } from 'node:crypto';
import { describe, expect } from 'vitest';
import type { Delivery } from '../../src/domain/delivery.js';
import { CANCELLED_BY_MODERATOR } from '../../src/domain/moderation.js';
import type { Store } from '../../src/store/port.js';
import { arm, at, newDeliveries, openedIncident, Split, raceIt, type ContractContext } from './store-contract-helpers.js';

const LEASE = 60_000;
const MOD = 'mod-ann';

/** An incident with `n` pending SOS deliveries. */
async function incidentWith(store: Store, n: number) {
  const { timer, incident } = await openedIncident(store, {
    locationName: 'Blue Bottle',
    location: { lat: 1.5, lng: 2.5 },
    displayName: 'Al',
  });
  const added = await store.addDeliveries(incident, newDeliveries(incident.id, n));
  await store.markEscalated(timer.id, incident.id);
  return { timer, incident, added };
}

/** Claim everything due and record `status` for each claimed delivery. */
async function finishAll(store: Store, status: 'dead' | 'failed' | 'sent'): Promise<Delivery[]> {
  const out: Delivery[] = [];
  for (const c of await store.claimDeliveries(100, LEASE)) {
    const d = await store.recordAttempt(c.key, c.attempts, {
      status,
      carrier: 'twilio',
      ...(status === 'sent' ? { providerMessageId: `SM${randomUUID()}` } : { error: 'twilio_30003' }),
    });
    if (d) out.push(d);
  }
  return out;
}

export function moderationCases(ctx: ContractContext): void {
  const it = ctx.it;
  const itRaces = raceIt(ctx);
  describe('moderation', () => {
    itRaces(
      'invariant 2: a moderator cancel racing a dispatcher claim — exactly one wins; a claimed delivery is never cancelled (200+ trials)',
      async () => {
        const [store, peer] = [ctx.store(), await ctx.peer()];
        const split = new Split(ctx, 'cancel (this side) vs claim (peer)');
        await split.trials(peer, 200, async () => {
          const { incident, added } = await incidentWith(store, 1);
          const key = added[0]!.key;
          const [cancelled, claimed] = await peer.race(
            async () => (await store.cancelPendingDeliveries(incident.id, MOD)).map((d) => d.key),
            'claimDeliveries',
            { limit: 10, leaseMs: LEASE },
          );
          expect([...cancelled, ...claimed]).toEqual([key]);
          const now = await store.getDelivery(key);
          if (claimed.length > 0) {
            split.theirs++;
            expect(now?.status).toBe('sending');
          } else {
            split.mine++;
            expect(now).toMatchObject({ status: 'superseded', lastError: CANCELLED_BY_MODERATOR });
          }
        });
      },
      120_000,
    );

    it('invariant 2: resendDelivery is a CAS from dead or failed only: pending again, attempts reset, one audit line', async () => {
      const store = ctx.store();
      const { added } = await incidentWith(store, 2);
      const [a, b] = added as [Delivery, Delivery];
      expect(await store.resendDelivery(a.key, MOD)).toBeNull(); // pending
      await finishAll(store, 'dead');
      const [c] = await Promise.all([store.getDelivery(b.key)]);
      expect(c?.status).toBe('dead');
      const resent = await store.resendDelivery(a.key, MOD);
      expect(resent).toMatchObject({ key: a.key, status: 'pending', attempts: 0, resends: 1 });
      expect(resent?.nextAttemptAt.getTime()).toBeLessThanOrEqual((await store.now()).getTime());
      // a repeat finds it pending: nothing changes, still one line
      expect(await store.resendDelivery(a.key, 'mod-bob')).toBeNull();
      const lines = (await store.listAudit({ limit: 50 })).filter((l) => l.target === a.key);
      expect(lines).toEqual([expect.objectContaining({ actor: MOD, action: 'delivery.resend', incidentId: a.incidentId })]);
      // claimable again, and a second death can be resent again (a second line)
      const again = await store.claimDeliveries(10, LEASE);
      expect(again.map((d) => d.key)).toEqual([a.key]);
      await store.recordAttempt(a.key, 1, { status: 'failed', carrier: 'twilio', error: 'twilio_21211' });
      expect(await store.resendDelivery(a.key, 'mod-bob')).toMatchObject({ status: 'pending', resends: 2 });
      expect((await store.listAudit({ limit: 50 })).filter((l) => l.target === a.key).map((l) => l.actor)).toEqual(['mod-bob', MOD]);
    });

    it('resendDelivery never moves a sent, delivered or superseded delivery', async () => {
      const store = ctx.store();
      const { incident, added } = await incidentWith(store, 1);
      const [sent] = await finishAll(store, 'sent');
      expect(sent?.status).toBe('sent');
      expect(await store.resendDelivery(added[0]!.key, MOD)).toBeNull();
      const more = await store.addDeliveries(incident, newDeliveries(incident.id, 1));
      const fresh = more.find((d) => d.status === 'pending');
      await store.cancelPendingDeliveries(incident.id, MOD);
      expect(await store.resendDelivery(fresh!.key, MOD)).toBeNull();
      expect((await store.getDelivery(fresh!.key))?.status).toBe('superseded');
    });

    it('cancelPendingDeliveries moves pending ones only (a claimed one is left sending), one audit line each; a repeat moves nothing', async () => {
      const store = ctx.store();
      const { incident, added } = await incidentWith(store, 1);
      const [claimed] = await store.claimDeliveries(10, LEASE);
      expect(claimed?.key).toBe(added[0]!.key);
      const later = await store.addDeliveries(incident, newDeliveries(incident.id, 2));
      const pendingKeys = later.filter((d) => d.status === 'pending').map((d) => d.key);
      expect(pendingKeys).toHaveLength(2);
      const moved = await store.cancelPendingDeliveries(incident.id, MOD);
      expect(moved.map((d) => d.key).sort()).toEqual([...pendingKeys].sort());
      for (const d of moved) expect(d).toMatchObject({ status: 'superseded', lastError: CANCELLED_BY_MODERATOR });
      expect((await store.getDelivery(claimed!.key))?.status).toBe('sending');
      expect(await store.cancelPendingDeliveries(incident.id, 'mod-bob')).toEqual([]);
      const lines = (await store.listAudit({ limit: 50 })).filter((l) => l.action === 'delivery.cancel');
      expect(lines.map((l) => l.target).sort()).toEqual([...pendingKeys].sort());
      expect(new Set(lines.map((l) => l.actor))).toEqual(new Set([MOD]));
      // the dispatcher never claims them
      expect((await store.claimDeliveries(10, LEASE)).map((d) => d.key)).toEqual([]);
    });

    it('addIncidentNote adds once per id (a retry returns the first note), with an audit line; notesFor lists them oldest first', async () => {
      const store = ctx.store();
      const { incident } = await incidentWith(store, 0);
      const before = await store.getIncident(incident.id);
      const id1 = randomUUID();
      const first = await store.addIncidentNote({
        id: id1,
        incidentId: incident.id,
        person: incident.userId,
        author: MOD,
        text: 'Called her brother.\nNo answer.',
      });
      expect(first).toMatchObject({
        created: true,
        note: { id: id1, incidentId: incident.id, author: MOD, text: 'Called her brother.\nNo answer.' },
      });
      const retry = await store.addIncidentNote({
        id: id1,
        incidentId: incident.id,
        person: incident.userId,
        author: MOD,
        text: 'something else',
      });
      expect(retry).toEqual({ created: false, note: first.note });
      // a later millisecond: notes of the same millisecond are ordered by id, which is random here
      await ctx.passTime(at(first.note!.createdAt, 1));
      await store.addIncidentNote({
        id: randomUUID(),
        incidentId: incident.id,
        person: incident.userId,
        author: 'mod-bob',
        text: 'Police informed.',
      });
      const notes = await store.notesFor([incident.id, randomUUID()]);
      expect(notes.map((n) => n.text)).toEqual(['Called her brother.\nNo answer.', 'Police informed.']);
      expect((await store.listAudit({ limit: 50 })).filter((l) => l.action === 'incident.note')).toHaveLength(2);
      // a note is a change of the incident
      expect((await store.getIncident(incident.id))!.updatedAt.getTime()).toBeGreaterThanOrEqual(before!.updatedAt.getTime());
    });

    it('listAudit pages newest first on (at, id) without gaps or repeats', async () => {
      const store = ctx.store();
      const { incident } = await incidentWith(store, 0);
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const id = randomUUID();
        ids.push(`note:${id}`);
        await store.addIncidentNote({ id, incidentId: incident.id, person: incident.userId, author: MOD, text: `n${i}` });
      }
      const seen: string[] = [];
      let page = await store.listAudit({ limit: 2 });
      while (page.length > 0) {
        for (let i = 1; i < page.length; i++) {
          const [p, q] = [page[i - 1]!, page[i]!];
          expect(p.at.getTime() > q.at.getTime() || (p.at.getTime() === q.at.getTime() && p.id > q.id)).toBe(true);
        }
        seen.push(...page.map((l) => l.id));
        const last = page[page.length - 1]!;
        page = await store.listAudit({ before: { at: last.at, id: last.id }, limit: 2 });
      }
      expect([...seen].sort()).toEqual([...ids].sort());
      expect(new Set(seen).size).toBe(seen.length);
    });

    it('retention anonymises only closed records older than the cut-off; open incidents and live timers untouched; a second run changes nothing', async () => {
      const store = ctx.store();
      const place = { locationName: 'Blue Bottle', location: { lat: 1.5, lng: 2.5 }, displayName: 'Al' };
      // closed: a safe timer, and an SOS resolved by a moderator with a sent text, a dead text and a note
      const safe = await arm(store, place);
      // its location trail goes with it; the live timer's stays
      const fixAt = (timerId: string, userId: string, ms: number) => ({ timerId, userId, at: new Date(ms), lat: 1.5, lng: 2.5 });
      await store.addFixes([
        fixAt(safe.id, safe.userId, safe.startedAt.getTime()),
        fixAt(safe.id, safe.userId, safe.startedAt.getTime() + 1),
      ]);
      await store.resolveTimer(safe.id, safe.userId, 'safe');
      const closed = await incidentWith(store, 2);
      await finishAll(store, 'sent');
      await store.addIncidentNote({
        id: randomUUID(),
        incidentId: closed.incident.id,
        person: closed.incident.userId,
        author: MOD,
        text: 'Reached her.',
      });
      await store.transitionIncident(closed.incident.id, ['active'], 'resolved', MOD);
      // open: an active incident with a pending text and a note, and a live timer
      const open = await incidentWith(store, 1);
      await store.addIncidentNote({
        id: randomUUID(),
        incidentId: open.incident.id,
        person: open.incident.userId,
        author: MOD,
        text: 'Calling.',
      });
      const live = await arm(store, place);
      await store.addFixes([fixAt(live.id, live.userId, live.startedAt.getTime())]);

      // a cut-off before they closed: nothing is old enough
      expect(await store.redactClosed(at(safe.startedAt, -1), 100)).toEqual({
        timers: 0,
        incidents: 0,
        deliveries: 0,
        notes: 0,
        fixes: 0,
        notifications: 0,
      });
      const cutoff = at(await store.now(), 1);
      await ctx.passTime(cutoff);
      expect(await store.redactClosed(cutoff, 100)).toEqual({
        timers: 2,
        incidents: 1,
        deliveries: 2,
        notes: 1,
        fixes: 2,
        notifications: 0,
      });
      expect(await store.listFixes(safe.id, 10)).toEqual([]);
      expect(await store.listFixes(live.id, 10)).toHaveLength(1);

      const t = await store.getTimer(safe.id);
      expect(t).toMatchObject({ status: 'safe' });
      expect(t).not.toHaveProperty('locationName');
      expect(t).not.toHaveProperty('location');
      const i = await store.getIncident(closed.incident.id);
      expect(i?.redactedAt).toBeInstanceOf(Date);
      expect(i).not.toHaveProperty('location');
      expect(i).not.toHaveProperty('displayName');
      for (const d of await store.deliveriesFor([closed.incident.id])) {
        expect(d).toMatchObject({ status: 'sent', body: '', contactName: '' });
        expect(d.phone).toMatch(/^\+1\*+\d\d$/);
      }
      expect((await store.notesFor([closed.incident.id]))[0]).toMatchObject({ text: '', author: MOD });
      // open and live: as they were
      expect(await store.getIncident(open.incident.id)).toMatchObject({ ...place, status: 'active' });
      expect(await store.getTimer(open.timer.id)).toMatchObject({ locationName: 'Blue Bottle' });
      expect(await store.getTimer(live.id)).toMatchObject({ ...place, status: 'active' });
      expect((await store.deliveriesFor([open.incident.id]))[0]).toMatchObject({ body: 'SOS body 0', status: 'pending' });
      expect((await store.notesFor([open.incident.id]))[0]?.text).toBe('Calling.');

      expect(await store.redactClosed(cutoff, 100)).toEqual({
        timers: 0,
        incidents: 0,
        deliveries: 0,
        notes: 0,
        fixes: 0,
        notifications: 0,
      });
      // an anonymised delivery is never resent
      const d = (await store.deliveriesFor([closed.incident.id]))[0]!;
      expect(await store.resendDelivery(d.key, MOD)).toBeNull();
    });

    it('retention is batched: each run does at most `limit` per kind and the next run resumes; an incident waits for its texts', async () => {
      const store = ctx.store();
      const timers = [];
      for (let i = 0; i < 3; i++) {
        const t = await arm(store, { locationName: `Place ${i}` });
        await store.resolveTimer(t.id, t.userId, 'cancelled');
        timers.push(t);
      }
      // a closed incident whose text is still pending: its texts and itself wait
      const busy = await incidentWith(store, 1);
      await store.transitionIncident(busy.incident.id, ['active'], 'resolved', MOD);
      const cutoff = at(await store.now(), 1);
      await ctx.passTime(cutoff);
      // four closed timers (the incident's too: it is closed), two per run
      expect(await store.redactClosed(cutoff, 2)).toEqual({ timers: 2, incidents: 0, deliveries: 0, notes: 0, fixes: 0, notifications: 0 });
      expect(await store.redactClosed(cutoff, 2)).toEqual({ timers: 2, incidents: 0, deliveries: 0, notes: 0, fixes: 0, notifications: 0 });
      expect(await store.redactClosed(cutoff, 2)).toEqual({ timers: 0, incidents: 0, deliveries: 0, notes: 0, fixes: 0, notifications: 0 });
      await finishAll(store, 'dead');
      expect(await store.redactClosed(cutoff, 2)).toEqual({ timers: 0, incidents: 1, deliveries: 1, notes: 0, fixes: 0, notifications: 0 });
    });
  });
}
