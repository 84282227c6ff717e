/**
 * Contract cases for the outboxes after the SOS: the all-clear owed by a false alarm,
 * superseding what has not gone out, the per-contact order of SOS and all-clear, and
 * the escalation dead letter.
 */
import { describe, expect } from 'vitest';
import { deliveryKey } from '../../src/domain/delivery.js';
import { OPEN_INCIDENT } from '../../src/domain/incident.js';
import type { NewDelivery, Store } from '../../src/store/port.js';
import { at, newDeliveries, openedIncident, untilAfter, type ContractContext } from './store-contract-helpers.js';

const LEASE = 60_000;

const allClearOf = (sos: NewDelivery): NewDelivery => ({
  ...sos,
  key: deliveryKey(sos.key.split(':')[0] ?? '', sos.contactId, 'all_clear'),
  kind: 'all_clear',
  body: 'all clear',
});
const movedOf = (sos: NewDelivery): NewDelivery => ({
  ...sos,
  key: deliveryKey(sos.key.split(':')[0] ?? '', sos.contactId, 'moved'),
  kind: 'moved',
  body: 'moved',
});

/** Claim everything due; the keys claimed. */
async function claimKeys(store: Store, leaseMs = LEASE): Promise<string[]> {
  return (await store.claimDeliveries(100, leaseMs)).map((d) => d.key).sort();
}

export function outboxCases(ctx: ContractContext): void {
  const it = ctx.it;
  describe('outbox', () => {
    it('invariant 4: the CAS to false_alarm records the all-clear as pending, listed until marked done (once)', async () => {
      const store = ctx.store();
      const { incident } = await openedIncident(store);
      expect(incident.allClear).toBeUndefined();
      expect(await store.pendingAllClears(10)).toEqual([]);
      const moved = await store.transitionIncident(incident.id, OPEN_INCIDENT, 'false_alarm', incident.userId);
      expect(moved).toMatchObject({ status: 'false_alarm', allClear: 'pending', resolvedBy: incident.userId });
      expect((await store.pendingAllClears(10)).map((i) => i.id)).toEqual([incident.id]);
      expect(await store.pendingAllClears(0)).toEqual([]);
      expect(await store.markAllClearDone(incident.id)).toBe(true);
      expect(await store.markAllClearDone(incident.id)).toBe(false);
      expect(await store.pendingAllClears(10)).toEqual([]);
      expect(await store.getIncident(incident.id)).toMatchObject({ status: 'false_alarm', allClear: 'done' });
    });

    it('invariant 4: acknowledging or resolving an incident owes no all-clear', async () => {
      const store = ctx.store();
      const { incident } = await openedIncident(store);
      await store.transitionIncident(incident.id, ['active'], 'acknowledged', 'mod');
      const resolved = await store.transitionIncident(incident.id, OPEN_INCIDENT, 'resolved', 'mod');
      expect(resolved?.allClear).toBeUndefined();
      expect(await store.pendingAllClears(10)).toEqual([]);
      expect(await store.markAllClearDone(incident.id)).toBe(false);
    });

    it('invariant 5: supersedePendingSos moves only the pending SOS of that incident, once', async () => {
      const store = ctx.store();
      const { incident } = await openedIncident(store);
      const other = await openedIncident(store);
      const sos = newDeliveries(incident.id, 3);
      await store.addDeliveries(incident, [...sos, allClearOf(sos[0]!)]);
      await store.addDeliveries(other.incident, newDeliveries(other.incident.id, 1));
      // one of ours is being sent: not pending, not superseded
      const claimed = await store.claimDeliveries(1, LEASE);
      expect(claimed).toHaveLength(1);
      const moved = await store.supersedePendingSos(incident.id);
      const expected = sos.map((d) => d.key).filter((k) => k !== claimed[0]!.key);
      expect(moved.map((d) => d.key).sort()).toEqual(
        claimed[0]!.incidentId === incident.id ? expected.sort() : sos.map((d) => d.key).sort(),
      );
      for (const d of moved) expect(d).toMatchObject({ status: 'superseded', kind: 'sos', incidentId: incident.id, attempts: 0 });
      expect(await store.supersedePendingSos(incident.id)).toEqual([]);
      const all = await store.deliveriesFor([incident.id, other.incident.id]);
      expect(all.find((d) => d.kind === 'all_clear')?.status).not.toBe('superseded');
      expect(all.filter((d) => d.incidentId === other.incident.id && d.status === 'superseded')).toEqual([]);
    });

    it('invariant 5: an all-clear is not claimed while its contact’s SOS is pending or sending; it is once the SOS is final', async () => {
      const store = ctx.store();
      const { incident } = await openedIncident(store);
      const [a, b] = newDeliveries(incident.id, 2) as [NewDelivery, NewDelivery];
      await store.addDeliveries(incident, [a, b]);
      // a's SOS is being sent, b's was sent
      const first = await store.claimDeliveries(100, LEASE);
      expect(first.map((d) => d.key).sort()).toEqual([a.key, b.key].sort());
      const bSos = first.find((d) => d.key === b.key)!;
      await store.recordAttempt(b.key, bSos.attempts, { status: 'sent', carrier: 'test', providerMessageId: 'pm-b' });
      await store.addDeliveries(incident, [allClearOf(a), allClearOf(b)]);
      expect(await claimKeys(store)).toEqual([allClearOf(b).key]);
      // a's SOS fails retryably: pending again, the all-clear still waits
      const aSos = first.find((d) => d.key === a.key)!;
      await store.recordAttempt(a.key, aSos.attempts, {
        status: 'pending',
        carrier: 'test',
        error: 'http_503',
        nextAttemptAt: at(await store.now(), 3_600_000),
      });
      expect(await claimKeys(store)).toEqual([]);
      // superseded is final: now the all-clear may go (the dispatcher decides whether it is sent)
      expect((await store.supersedePendingSos(incident.id)).map((d) => d.key)).toEqual([a.key]);
      expect(await claimKeys(store)).toEqual([allClearOf(a).key]);
    });

    it('invariant 5: an all-clear is not claimed while its contact’s moved follow-up is pending or sending; it is once that is final', async () => {
      const store = ctx.store();
      const { incident } = await openedIncident(store);
      const [a, b] = newDeliveries(incident.id, 2) as [NewDelivery, NewDelivery];
      await store.addDeliveries(incident, [a, b]);
      for (const d of await store.claimDeliveries(100, LEASE))
        await store.recordAttempt(d.key, d.attempts, { status: 'sent', carrier: 'test', providerMessageId: `pm-${d.key}` });
      // a's follow-up is on its way when the all-clears are queued
      await store.addDeliveries(incident, [movedOf(a)]);
      const [moving] = await store.claimDeliveries(100, LEASE);
      expect(moving?.key).toBe(movedOf(a).key);
      await store.addDeliveries(incident, [allClearOf(a), allClearOf(b)]);
      expect(await claimKeys(store)).toEqual([allClearOf(b).key]);
      // it fails retryably: pending and due again; claiming takes the follow-up, a's all-clear still waits
      await store.recordAttempt(moving!.key, moving!.attempts, {
        status: 'pending',
        carrier: 'test',
        error: 'http_503',
        nextAttemptAt: await store.now(),
      });
      const [retry] = await store.claimDeliveries(100, LEASE);
      expect(retry?.key).toBe(movedOf(a).key);
      expect(await claimKeys(store)).toEqual([]);
      // it went out: now the all-clear may go
      await store.recordAttempt(retry!.key, retry!.attempts, { status: 'sent', carrier: 'test', providerMessageId: 'pm-moved' });
      expect(await claimKeys(store)).toEqual([allClearOf(a).key]);
    });

    it('invariant 5: releaseClaim gives a claim back (pending, due when asked, its attempt uncounted, the last outcome kept), for its own attempt only', async () => {
      const store = ctx.store();
      const { incident } = await openedIncident(store);
      const [a] = newDeliveries(incident.id, 1) as [NewDelivery];
      await store.addDeliveries(incident, [a]);
      const [first] = await store.claimDeliveries(1, LEASE);
      await store.recordAttempt(a.key, first!.attempts, {
        status: 'pending',
        carrier: 'test',
        error: 'timeout',
        nextAttemptAt: await store.now(),
      });
      const [second] = await store.claimDeliveries(1, LEASE);
      expect(second).toMatchObject({ key: a.key, attempts: 2, status: 'sending' });
      expect(await store.releaseClaim(a.key, 1, await store.now())).toBeNull();
      const due = at(await store.now(), 3_600_000);
      const back = await store.releaseClaim(a.key, 2, due);
      expect(back).toMatchObject({ key: a.key, status: 'pending', attempts: 1, lastError: 'timeout' });
      expect(back?.leaseUntil).toBeUndefined();
      expect(back?.nextAttemptAt.getTime()).toBe(due.getTime());
      expect(await store.releaseClaim(a.key, 2, due)).toBeNull();
      expect(await claimKeys(store)).toEqual([]);
    });

    it('invariant 5: a lapsed lease marks the delivery maybeAccepted; an ambiguous attempt marks it for good', async () => {
      const store = ctx.store();
      const { incident } = await openedIncident(store);
      const [a, b] = newDeliveries(incident.id, 2) as [NewDelivery, NewDelivery];
      await store.addDeliveries(incident, [a, b]);
      const first = await store.claimDeliveries(100, 50);
      expect(first.every((d) => d.maybeAccepted === undefined)).toBe(true);
      // b's attempt timed out: it may be at the contact; a later definite answer does not undo that
      const bSos = first.find((d) => d.key === b.key)!;
      const back = await store.recordAttempt(b.key, bSos.attempts, {
        status: 'pending',
        carrier: 'test',
        error: 'timeout',
        nextAttemptAt: await store.now(),
        maybeAccepted: true,
      });
      expect(back).toMatchObject({ status: 'pending', maybeAccepted: true });
      // a's lease lapses (its dispatcher died mid-send)
      await untilAfter(store, at(first[0]!.leaseUntil!, 1));
      const again = await store.claimDeliveries(100, LEASE);
      expect(again.find((d) => d.key === a.key)).toMatchObject({ status: 'sending', attempts: 2, maybeAccepted: true });
      const b2 = again.find((d) => d.key === b.key)!;
      const later = await store.recordAttempt(b.key, b2.attempts, { status: 'failed', carrier: 'test', error: 'twilio_21211' });
      expect(later).toMatchObject({ status: 'failed', maybeAccepted: true });
    });

    it('supersedeClaimed: sending at that attempt → superseded without counting the attempt; otherwise nothing', async () => {
      const store = ctx.store();
      const { incident } = await openedIncident(store);
      const [a] = newDeliveries(incident.id, 1) as [NewDelivery];
      await store.addDeliveries(incident, [a]);
      const [c] = await store.claimDeliveries(10, LEASE);
      expect(c?.attempts).toBe(1);
      expect(await store.supersedeClaimed(a.key, 2, 'false_alarm')).toBeNull();
      const done = await store.supersedeClaimed(a.key, 1, 'false_alarm');
      expect(done).toMatchObject({ status: 'superseded', attempts: 0, lastError: 'false_alarm' });
      expect(done?.leaseUntil).toBeUndefined();
      expect(await store.supersedeClaimed(a.key, 1, 'false_alarm')).toBeNull();
      expect(await claimKeys(store)).toEqual([]);
    });

    it('invariant 4: a failing escalation is counted and dead-lettered at the limit: no longer pending, listed as failed', async () => {
      const store = ctx.store();
      const { timer } = await openedIncident(store);
      const first = await store.recordEscalationFailure(timer.id, 'boom 1', 3);
      expect(first).toMatchObject({ escalation: 'pending', escalationAttempts: 1, escalationError: 'boom 1' });
      await store.recordEscalationFailure(timer.id, 'boom 2', 3);
      expect((await store.pendingEscalations(10)).map((t) => t.id)).toEqual([timer.id]);
      expect(await store.failedEscalations(10)).toEqual([]);
      const third = await store.recordEscalationFailure(timer.id, 'boom 3', 3);
      expect(third).toMatchObject({ escalation: 'failed', escalationAttempts: 3, escalationError: 'boom 3' });
      expect(await store.pendingEscalations(10)).toEqual([]);
      expect((await store.failedEscalations(10)).map((t) => t.id)).toEqual([timer.id]);
      // only a pending escalation counts failures; a dead letter is not marked escalated by a late run
      expect(await store.recordEscalationFailure(timer.id, 'boom 4', 3)).toBeNull();
      expect(await store.markEscalated(timer.id, 'inc')).toBe(false);
      expect(await store.getTimer(timer.id)).toMatchObject({ escalation: 'failed', escalationAttempts: 3 });
    });

    it('invariant 4: a moderator retries a dead letter: pending again with a fresh count, once', async () => {
      const store = ctx.store();
      const { timer } = await openedIncident(store);
      expect(await store.retryEscalation(timer.id, 'mod-ann')).toBeNull(); // pending, not failed
      await store.recordEscalationFailure(timer.id, 'boom', 1);
      const back = await store.retryEscalation(timer.id, 'mod-ann');
      expect(back).toMatchObject({ id: timer.id, escalation: 'pending', escalationError: 'boom' });
      expect(back?.escalationAttempts).toBeUndefined();
      expect(await store.retryEscalation(timer.id, 'mod-ann')).toBeNull();
      expect((await store.pendingEscalations(10)).map((t) => t.id)).toEqual([timer.id]);
      expect(await store.failedEscalations(10)).toEqual([]);
      expect(await store.retryEscalation('no-such-timer', 'mod-ann')).toBeNull();
    });
  });
}
