/**
 * Contract cases for group commit (src/store/port-batch.ts): a batch of escalations in one
 * write, the reads that feed it, the next deadline, and a batch of delivery outcomes.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect } from 'vitest';
import type { Timer } from '../../src/domain/timer.js';
import type { EscalationItem, SosRecipient } from '../../src/store/port-batch.js';
import type { Store } from '../../src/store/port.js';
import { arm, armDue, countBy, newDeliveries, openedIncident, type ContractContext } from './store-contract-helpers.js';

const recipients = (n: number, tag = 'c'): SosRecipient[] =>
  Array.from({ length: n }, (_, i) => ({ contactId: `${tag}${i}`, contactName: `C${i}`, phone: `+1415555${1000 + i}`, body: 'sos' }));

/** `n` due timers claimed by a sweep with fence 7. */
async function claimed(store: Store, n: number): Promise<Timer[]> {
  for (let i = 0; i < n; i++) await armDue(store);
  const ts = await store.claimDueTimers(1000, 7);
  expect(ts).toHaveLength(n);
  return ts;
}

const itemsOf = (timers: Timer[], contacts: (i: number) => number): EscalationItem[] =>
  timers.map((timer, i) => ({ timer, fence: 7, incidentId: `inc-${randomUUID()}`, recipients: recipients(contacts(i)) }));

export function batchCases(ctx: ContractContext): void {
  const it = ctx.it;
  describe('group commit', () => {
    it('invariant 4: escalateBatch opens one incident per timer, one delivery per contact, and marks every escalation done', async () => {
      const store = ctx.store();
      const timers = await claimed(store, 5);
      // the third person has no contacts: the incident still opens and the escalation completes
      const items = itemsOf(timers, (i) => (i === 2 ? 0 : 2));
      const results = await store.escalateBatch(items);
      expect(results.map((r) => r.timerId)).toEqual(timers.map((t) => t.id));
      expect(results.every((r) => r.created && r.marked)).toBe(true);
      expect(results.map((r) => r.incident.id)).toEqual(items.map((i) => i.incidentId));
      expect(results[0]!.incident).toMatchObject({ timerId: timers[0]!.id, userId: timers[0]!.userId, status: 'active', fence: 7 });
      const ds = await store.deliveriesFor(results.map((r) => r.incident.id));
      expect(ds).toHaveLength(8);
      expect(ds.every((d) => d.kind === 'sos' && d.status === 'pending' && d.attempts === 0)).toBe(true);
      expect(new Set(ds.map((d) => d.key)).size).toBe(8);
      expect(ds.filter((d) => d.incidentId === results[2]!.incident.id)).toEqual([]);
      for (const t of timers) expect(await store.getTimer(t.id)).toMatchObject({ escalation: 'done', incidentId: expect.any(String) });
      expect(await store.pendingEscalations(10)).toEqual([]);
    });

    it('invariant 3: a repeated batch (another sweeper, a repair) is harmless: same incidents, no second delivery, nothing marked twice', async () => {
      const store = ctx.store();
      const timers = await claimed(store, 3);
      const first = await store.escalateBatch(itemsOf(timers, () => 2));
      // a second run with fresh incident ids and one more contact each: the incidents stay, only the new contact is added
      const again = await store.escalateBatch(
        timers.map((timer) => ({ timer, fence: 8, incidentId: `inc-${randomUUID()}`, recipients: recipients(3) })),
      );
      expect(again.map((r) => r.incident.id)).toEqual(first.map((r) => r.incident.id));
      expect(again.every((r) => !r.created && !r.marked)).toBe(true);
      expect(again.every((r) => r.incident.fence === 7)).toBe(true);
      const ds = await store.deliveriesFor(first.map((r) => r.incident.id));
      expect(ds).toHaveLength(9);
      expect([...countBy(ds, (d) => `${d.incidentId}/${d.contactId}`).values()].every((n) => n === 1)).toBe(true);
      expect((await store.listIncidents()).filter((i) => timers.some((t) => t.id === i.timerId))).toHaveLength(3);
    });

    it('invariant 4: a batch completes an escalation whose incident was opened before (a crash half-way): the incident is kept', async () => {
      const store = ctx.store();
      const { timer, incident } = await openedIncident(store);
      const [r] = await store.escalateBatch([{ timer, fence: 9, incidentId: 'inc-other', recipients: recipients(2) }]);
      expect(r).toMatchObject({ timerId: timer.id, created: false, marked: true });
      expect(r!.incident.id).toBe(incident.id);
      expect((await store.deliveriesFor([incident.id])).map((d) => d.key).sort()).toEqual([`${incident.id}:c0`, `${incident.id}:c1`]);
      expect(await store.escalateBatch([])).toEqual([]);
    });

    it('incidentsForTimers, contactsOf and countDeliveriesSinceMany read many at once', async () => {
      const store = ctx.store();
      const a = await openedIncident(store);
      const b = await openedIncident(store);
      expect((await store.incidentsForTimers([a.timer.id, b.timer.id, 'nope'])).map((i) => i.id).sort()).toEqual(
        [a.incident.id, b.incident.id].sort(),
      );
      expect(await store.incidentsForTimers([])).toEqual([]);
      await store.replaceContacts('ua', [
        { id: 'x', name: 'X', phone: '+14155550100' },
        { id: 'y', name: 'Y', phone: '+14155550101' },
      ]);
      await store.replaceContacts('ub', [{ id: 'z', name: 'Z', phone: '+14155550102' }]);
      const cs = await store.contactsOf(['ua', 'ub', 'nobody']);
      expect(cs.get('ua')?.map((c) => c.id)).toEqual(['x', 'y']);
      expect(cs.get('ub')?.map((c) => c.id)).toEqual(['z']);
      expect(cs.get('nobody')).toEqual([]);
      const since = new Date((await store.now()).getTime() - 60_000);
      await store.addDeliveries(a.incident, newDeliveries(a.incident.id, 3));
      const counts = await store.countDeliveriesSinceMany([a.incident.userId, b.incident.userId], since);
      expect(counts.get(a.incident.userId)).toBe(3);
      expect(counts.get(b.incident.userId)).toBe(0);
      expect(counts.get(a.incident.userId)).toBe(await store.countDeliveriesSince(a.incident.userId, since));
    });

    it('nextDeadline is the earliest deadline of a live timer, null when none is live', async () => {
      const store = ctx.store();
      expect(await store.nextDeadline()).toBeNull();
      const later = await arm(store, { expiresInMs: 120_000 });
      const sooner = await arm(store, { expiresInMs: 30_000 });
      expect((await store.nextDeadline())?.getTime()).toBe(sooner.expiresAt.getTime());
      const extended = await store.extendTimer(sooner.id, sooner.userId, 600, { maxExtensions: 5, maxTotalSeconds: 86_400 });
      expect(extended?.status).toBe('extended');
      expect((await store.nextDeadline())?.getTime()).toBe(later.expiresAt.getTime());
      await store.resolveTimer(later.id, later.userId, 'safe');
      expect((await store.nextDeadline())?.getTime()).toBe(extended!.expiresAt.getTime());
      await store.resolveTimer(sooner.id, sooner.userId, 'cancelled');
      expect(await store.nextDeadline()).toBeNull();
    });

    it('invariant 5: recordAttempts records many outcomes, each a CAS on its lease: a lost lease answers null', async () => {
      const store = ctx.store();
      const { incident } = await openedIncident(store);
      await store.addDeliveries(incident, newDeliveries(incident.id, 3));
      const leased = (await store.claimDeliveries(10, 60_000)).sort((x, y) => x.key.localeCompare(y.key));
      expect(leased).toHaveLength(3);
      const [d0, d1, d2] = leased as [(typeof leased)[0], (typeof leased)[0], (typeof leased)[0]];
      const now = await store.now();
      const out = await store.recordAttempts([
        { key: d0.key, attempt: d0.attempts, outcome: { status: 'sent', carrier: 'twilio', providerMessageId: 'SM1' } },
        { key: d1.key, attempt: d1.attempts + 1, outcome: { status: 'sent', carrier: 'twilio', providerMessageId: 'SM2' } },
        {
          key: d2.key,
          attempt: d2.attempts,
          outcome: { status: 'pending', carrier: 'twilio', error: 'http_503', nextAttemptAt: new Date(now.getTime() + 5000) },
        },
      ]);
      expect(out.map((d) => d?.status ?? null)).toEqual(['sent', null, 'pending']);
      expect(out[0]).toMatchObject({ key: d0.key, providerMessageId: 'SM1', carrier: 'twilio' });
      expect(out[2]).toMatchObject({ key: d2.key, lastError: 'http_503' });
      expect(await store.getDelivery(d1.key)).toMatchObject({ status: 'sending' });
      // a repeat finds no lease: nothing changes
      expect(await store.recordAttempts([{ key: d0.key, attempt: d0.attempts, outcome: { status: 'dead', carrier: 'twilio' } }])).toEqual([
        null,
      ]);
      expect(await store.recordAttempts([])).toEqual([]);
    });
  });
}
