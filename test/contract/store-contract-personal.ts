/**
 * Contract cases for "a person's data is theirs" (docs/privacy.md, "Your data"): the export
 * holds everything about the person and nothing about anyone else; the erasure removes their
 * timers, fixes, contacts, inbox and idempotency records, keeps their incidents, texts and
 * audit lines under the pseudonym only, and is refused while an SOS of theirs is open or a
 * timer live.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect } from 'vitest';
import type { Store } from '../../src/store/port.js';
import { arm, at, newDeliveries, newTimer, openedIncident, type ContractContext } from './store-contract-helpers.js';

/** A person with every kind of record: a closed SOS with texts and audit lines, a keyed timer with fixes, contacts, inbox. */
async function personWithHistory(store: Store, userId: string) {
  const { timer: sosTimer, incident } = await openedIncident(store, { userId, displayName: 'Rita R' });
  await store.addDeliveries(incident, newDeliveries(incident.id, 2));
  await store.markEscalated(sosTimer.id, incident.id);
  // a contact answered YES while it was open: the acknowledgement names them
  expect(
    await store.addContactAck(incident.id, {
      contactId: 'c_bob',
      name: 'Bob Brother',
      at: await store.now(),
      messageSid: `SM${randomUUID()}`,
    }),
  ).not.toBeNull();
  await store.transitionIncident(incident.id, ['active'], 'resolved', 'mod-ann', { audit: true });
  const keyed = await store.armTimer(await newTimer(store, { userId, locationName: 'Blue Bottle' }), {
    key: `k-${randomUUID()}`,
    fingerprint: 'f1',
  });
  if (keyed.kind !== 'created') throw new Error(keyed.kind);
  const now = await store.now();
  await store.addFixes([
    { timerId: keyed.timer.id, userId, lat: 1.5, lng: 2.5, at: at(now, -2000) },
    { timerId: keyed.timer.id, userId, lat: 1.6, lng: 2.6, at: at(now, -1000) },
  ]);
  expect(await store.resolveTimer(keyed.timer.id, userId, 'safe')).not.toBeNull();
  await store.replaceContacts(userId, [{ id: `c_${randomUUID().slice(0, 8)}`, name: 'Bob Brother', phone: '+14155550123' }], {
    language: 'es',
    timeZone: 'Europe/Madrid',
  });
  await store.setDuressPin(userId, { salt: 'c2FsdA', hash: 'aGFzaA', cost: 16384 });
  await store.addNotification({
    id: `ntf_${randomUUID()}`,
    userId,
    key: `k:${randomUUID()}`,
    kind: 'timer_warning',
    title: 't',
    body: 'b',
  });
  await store.recordAccess([
    { id: `read:${randomUUID()}`, actor: 'mod-bob', action: 'timers.read', target: userId, person: userId, reason: 'support call' },
  ]);
  const stamp = await store.revokeTokens(userId, 'mod-cat');
  return { incident, sosTimer, keyedTimer: keyed.timer, stamp };
}

export function personalCases(ctx: ContractContext): void {
  const it = ctx.it;
  describe('personal data', () => {
    it("personalData: every kind of the person's records, nobody else's", async () => {
      const store = ctx.store();
      const rita = `rita-${randomUUID()}`;
      const other = `other-${randomUUID()}`;
      const h = await personWithHistory(store, rita);
      await personWithHistory(store, other);
      const d = await store.personalData(rita);
      expect(d.timers.map((t) => t.id).sort()).toEqual([h.sosTimer.id, h.keyedTimer.id].sort());
      expect(d.fixes.map((f) => [f.timerId, f.lat])).toEqual([
        [h.keyedTimer.id, 1.5],
        [h.keyedTimer.id, 1.6],
      ]);
      expect(d.contacts.map((c) => c.name)).toEqual(['Bob Brother']);
      expect(d.contactSettings).toEqual({ language: 'es', timeZone: 'Europe/Madrid' });
      expect(d.duressPinSet).toBe(true);
      expect(d.notifications).toHaveLength(1);
      expect(d.incidents.map((i) => i.id)).toEqual([h.incident.id]);
      expect(d.idempotencyRecords).toBe(1);
      for (const part of [d.timers, d.fixes, d.notifications, d.incidents]) expect(part.every((x) => x.userId === rita)).toBe(true);
      expect(await store.personalData(`nobody-${randomUUID()}`)).toEqual({
        timers: [],
        fixes: [],
        contacts: [],
        contactSettings: {},
        duressPinSet: false,
        notifications: [],
        incidents: [],
        idempotencyRecords: 0,
      });
    });

    it('erasePerson: refused while an incident of theirs is open or a timer live, changing nothing', async () => {
      const store = ctx.store();
      const { incident } = await openedIncident(store);
      const before = await store.personalData(incident.userId);
      expect(await store.erasePerson(incident.userId, 'p_x')).toEqual({ kind: 'incident_open', incidentId: incident.id });
      expect(await store.personalData(incident.userId)).toEqual(before);
      const live = await arm(store);
      expect(await store.erasePerson(live.userId, 'p_y')).toEqual({ kind: 'timer_live', timerId: live.id });
      expect((await store.getTimer(live.id))?.status).toBe('active');
    });

    it('erasePerson: their timers, fixes, contacts, inbox and keys gone; incidents, texts and audit keep only the pseudonym; others untouched; a repeat is harmless', async () => {
      const store = ctx.store();
      const rita = `rita-${randomUUID()}`;
      const other = `other-${randomUUID()}`;
      const pseudonym = `p_${randomUUID().slice(0, 8)}`;
      const h = await personWithHistory(store, rita);
      await personWithHistory(store, other);
      const otherBefore = await store.personalData(other);

      const r = await store.erasePerson(rita, pseudonym);
      expect(r).toEqual({
        kind: 'erased',
        counts: {
          timers: 2,
          fixes: 2,
          contacts: 1,
          duressPin: 1,
          notifications: 1,
          idempotencyRecords: 1,
          incidents: 1,
          deliveries: 2,
          auditLines: 3,
        },
      });
      // the duress PIN's hash and the list's language and time zone go too
      expect(await store.getDuressPin(rita)).toBeNull();
      expect(await store.getContactSettings(rita)).toEqual({});
      expect(await store.personalData(rita)).toEqual({
        timers: [],
        fixes: [],
        contacts: [],
        contactSettings: {},
        duressPinSet: false,
        notifications: [],
        incidents: [],
        idempotencyRecords: 0,
      });
      expect(await store.getTimer(h.keyedTimer.id)).toBeNull();
      // the incident stays for review under the pseudonym, without the display name; so do its texts
      const kept = await store.getIncident(h.incident.id);
      expect(kept).toMatchObject({ userId: pseudonym, status: 'resolved' });
      expect(kept?.displayName).toBeUndefined();
      // and without the names of the contacts who acknowledged
      expect(kept?.contactAcks).toBeUndefined();
      expect((await store.deliveriesFor([h.incident.id])).map((d) => d.userId)).toEqual([pseudonym, pseudonym]);
      // the audit names only the pseudonym: in `person`, in `target` and in a revocation's id
      const lines = await store.listAudit({ limit: 500 });
      expect(JSON.stringify(lines)).not.toContain(rita);
      const theirs = await store.listAudit({ limit: 500, filter: { person: pseudonym } });
      expect(theirs.map((l) => l.action).sort()).toEqual(['incident.resolve', 'timers.read', 'user.revoke_tokens']);
      expect(theirs.find((l) => l.action === 'user.revoke_tokens')).toMatchObject({
        id: `revoke:${pseudonym}:${h.stamp.getTime()}`,
        target: pseudonym,
      });
      // someone else's records are as they were
      expect(await store.personalData(other)).toEqual(otherBefore);
      expect((await store.listAudit({ limit: 500, filter: { person: other } })).length).toBe(3);
      // a repeat erases nothing more
      expect(await store.erasePerson(rita, pseudonym)).toEqual({
        kind: 'erased',
        counts: {
          timers: 0,
          fixes: 0,
          contacts: 0,
          duressPin: 0,
          notifications: 0,
          idempotencyRecords: 0,
          incidents: 0,
          deliveries: 0,
          auditLines: 0,
        },
      });
    });

    it('retention deletes inbox entries recorded before the cut-off and anonymises a dead letter nobody retried (which then cannot be retried)', async () => {
      const store = ctx.store();
      const userId = `u-${randomUUID()}`;
      const note = (id: string) => ({ id, userId, key: id, kind: 'timer_warning' as const, title: 't', body: 'b' });
      await store.addNotification(note(`ntf_old_${randomUUID()}`));
      const { timer } = await openedIncident(store, { userId, locationName: 'Blue Bottle', location: { lat: 1, lng: 2 } });
      // its escalation dead-lettered: no incident was needed to get here
      const dead = await arm(store, { userId: `d-${randomUUID()}`, startOffsetMs: -120_000, expiresInMs: -1_000, locationName: 'Pier 39' });
      const [claimed] = (await store.claimDueTimers(10, 2)).filter((t) => t.id === dead.id);
      expect(claimed).toBeDefined();
      expect((await store.recordEscalationFailure(dead.id, 'boom', 1))?.escalation).toBe('failed');
      const cutoff = await store.now();
      await ctx.passTime(cutoff);
      await store.addNotification(note(`ntf_new_${randomUUID()}`));

      const counts = await store.redactClosed(cutoff, 100);
      expect(counts.notifications).toBe(1);
      expect((await store.listNotifications(userId)).map((n) => n.id.slice(0, 8))).toEqual(['ntf_new_']);
      const anonymised = await store.getTimer(dead.id);
      expect(anonymised?.locationName).toBeUndefined();
      expect(anonymised?.escalation).toBe('failed');
      // an anonymised dead letter has nothing left to escalate with: a retry changes nothing
      expect(await store.retryEscalation(dead.id, 'mod-ann')).toBeNull();
      expect((await store.getTimer(dead.id))?.escalation).toBe('failed');
      // the SOS timer (escalation pending, its incident open) is untouched
      expect((await store.getTimer(timer.id))?.locationName).toBe('Blue Bottle');
      expect((await store.redactClosed(cutoff, 100)).notifications).toBe(0);
    });
  });
}
