/**
 * Contract cases: re-keying stored contact ids (docs/security.md, "Contact ids"). Guards the
 * threat "anonymised numbers can be recovered": after the re-key no stored row holds an id that
 * a plain hash of person and number gives back; and invariant 5 across it: a delivery made before
 * the re-key is found again after it (no second text to the same contact).
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { describe, expect } from 'vitest';
import { contactIdKey, ContactIdKeyMismatch, type Contact, type ContactIdKey } from '../../src/domain/contact.js';
import { deliveryKey, recipientOf, type Delivery } from '../../src/domain/delivery.js';
import type { Incident } from '../../src/domain/incident.js';
import type { RekeyStep } from '../../src/store/port-contact-ids.js';
import type { Store } from '../../src/store/port.js';
import { at, openedIncident, type ContractContext } from './store-contract-helpers.js';

/** what every contact id was before keyed ids: a plain SHA-256 of person and number */
const legacyId = (userId: string, phone: string): string =>
  `c_${createHash('sha256').update(`${userId}\u0000${phone}`).digest('hex').slice(0, 16)}`;

const newKey = () => randomBytes(32).toString('hex');

interface Seeded {
  userId: string;
  phones: { a: string; b: string; gone: string };
  /** closed, anonymised: a's and gone's texts, cancelled by a moderator (audit lines) */
  closed: Incident;
  /** open: a's and b's SOS, pending */
  open: Incident;
}

const sos = (incidentId: string, id: string, name: string, phone: string) => ({
  key: deliveryKey(incidentId, id, 'sos'),
  contactId: id,
  contactName: name,
  phone,
  kind: 'sos' as const,
  body: `SOS for ${name}`,
});

/** A person as an earlier version stored them: legacy ids in the contacts, deliveries (open and anonymised) and audit. */
async function seed(store: Store): Promise<Seeded> {
  const userId = `u-${randomUUID().slice(0, 8)}`;
  const phones = { a: '+14155550101', b: '+14155550102', gone: '+14155550103' };
  const closed = (await openedIncident(store, { userId })).incident;
  await store.addDeliveries(closed, [
    sos(closed.id, legacyId(userId, phones.a), 'Ann', phones.a),
    sos(closed.id, legacyId(userId, phones.gone), 'Gus', phones.gone),
  ]);
  expect(await store.cancelPendingDeliveries(closed.id, 'mod-1')).toHaveLength(2);
  await store.transitionIncident(closed.id, ['active'], 'resolved', 'mod-1');
  const redacted = await store.redactClosed(at(await store.now(), 3_600_000), 100);
  expect(redacted.deliveries).toBe(2);
  // Gus is no longer a contact: his only trace is the anonymised text
  await store.replaceContacts(userId, [
    { id: legacyId(userId, phones.a), name: 'Ann', phone: phones.a },
    { id: legacyId(userId, phones.b), name: 'Bob', phone: phones.b },
  ]);
  const open = (await openedIncident(store, { userId })).incident;
  await store.addDeliveries(open, [
    sos(open.id, legacyId(userId, phones.a), 'Ann', phones.a),
    sos(open.id, legacyId(userId, phones.b), 'Bob', phones.b),
  ]);
  return { userId, phones, closed, open };
}

/** Everything the store holds about the person, as text: no legacy id may be in it. */
async function everything(store: Store, s: Seeded): Promise<{ contacts: Contact[]; deliveries: Delivery[]; text: string }> {
  const contacts = await store.getContacts(s.userId);
  const deliveries = await store.deliveriesFor([s.closed.id, s.open.id]);
  const audit = await store.listAudit({ limit: 100 });
  return { contacts, deliveries, text: JSON.stringify({ contacts, deliveries, audit }) };
}

/** The seeded person as it must be once keyed with `key` (`gone`: what the anonymised contact's id became). */
async function expectKeyed(store: Store, s: Seeded, key: ContactIdKey, gone: string): Promise<void> {
  const { contacts, deliveries, text } = await everything(store, s);
  for (const p of Object.values(s.phones)) expect(text).not.toContain(legacyId(s.userId, p));
  const [a, b] = [key.of(s.userId, s.phones.a), key.of(s.userId, s.phones.b)];
  expect(contacts.map((c) => c.id)).toEqual([a, b]);
  const keys = (i: Incident) =>
    deliveries
      .filter((d) => d.incidentId === i.id)
      .map((d) => d.key)
      .sort();
  expect(keys(s.open)).toEqual([deliveryKey(s.open.id, a, 'sos'), deliveryKey(s.open.id, b, 'sos')].sort());
  // the anonymised text of a contact still in the list moves with the contact; the other's is wrapped
  expect(keys(s.closed)).toEqual([deliveryKey(s.closed.id, a, 'sos'), deliveryKey(s.closed.id, gone, 'sos')].sort());
  for (const d of deliveries) expect(d.key).toBe(deliveryKey(d.incidentId, d.contactId, d.kind));
  // the moderator's lines name the delivery under its new key
  const audit = (await store.listAudit({ limit: 100 })).filter((l) => l.incidentId === s.closed.id);
  expect(audit.map((l) => l.target).sort()).toEqual(keys(s.closed));
  for (const l of audit) expect(l.id).toBe(`cancel:${l.target}`);
  // nothing else changed: the open SOS is still waiting to go out, once
  expect(deliveries.filter((d) => d.incidentId === s.open.id).map((d) => [d.status, d.attempts])).toEqual([
    ['pending', 0],
    ['pending', 0],
  ]);
}

/** invariant 5 after a re-key: the escalation repaired again with the saved contacts adds nothing, and each contact's SOS goes out once */
async function expectOneTextPerContact(store: Store, s: Seeded): Promise<void> {
  const contacts = await store.getContacts(s.userId);
  const again = contacts.map((c) => ({ ...recipientOf(c), key: deliveryKey(s.open.id, c.id, 'sos'), kind: 'sos' as const, body: 'again' }));
  const all = await store.addDeliveries(s.open, again);
  expect(all).toHaveLength(2);
  const claimed = await store.claimDeliveries(100, 60_000);
  expect(claimed.map((d) => d.phone).sort()).toEqual([s.phones.a, s.phones.b]);
}

export function contactIdCases(ctx: ContractContext): void {
  const { it } = ctx;
  describe('contact id re-key', () => {
    it('threat: the legacy ids (a plain hash of person and number) are re-keyed everywhere; one text per contact still', async () => {
      const store = ctx.store();
      const s = await seed(store);
      const key = contactIdKey(newKey());
      const r = await store.rekeyContactIds(key);
      expect(r).toMatchObject({ from: 'sha256', to: key.fingerprint, people: 1, contacts: 2, deliveries: 4, audit: 2 });
      await expectKeyed(store, s, key, key.rewrap(legacyId(s.userId, s.phones.gone)));
      // done once: the next start reads one record and moves nothing
      expect(await store.rekeyContactIds(key)).toMatchObject({ from: key.fingerprint, to: key.fingerprint, people: 0 });
      await expectOneTextPerContact(store, s);
    });

    it('rotation: CONTACT_ID_KEY_PREVIOUS → CONTACT_ID_KEY re-keys again; another key is refused and changes nothing', async () => {
      const store = ctx.store();
      const s = await seed(store);
      const old = newKey();
      const first = contactIdKey(old);
      await store.rekeyContactIds(first);
      const stranger = contactIdKey(newKey());
      await expect(store.rekeyContactIds(stranger)).rejects.toBeInstanceOf(ContactIdKeyMismatch);
      await expectKeyed(store, s, first, first.rewrap(legacyId(s.userId, s.phones.gone)));
      const next = contactIdKey(newKey(), old);
      expect(await store.rekeyContactIds(next)).toMatchObject({ from: first.fingerprint, to: next.fingerprint, deliveries: 4 });
      await expectKeyed(store, s, next, next.rewrap(first.rewrap(legacyId(s.userId, s.phones.gone))));
      expect(JSON.stringify(await everything(store, s))).not.toContain(first.of(s.userId, s.phones.a));
      await expectOneTextPerContact(store, s);
    });

    for (const stop of [1, 2, 4, 6]) {
      it(`a re-key that stops at step ${stop} (a crash) is resumed to the same result, nothing duplicated`, async () => {
        const store = ctx.store();
        const s = await seed(store);
        const key = contactIdKey(newKey());
        let steps = 0;
        const crash = (_: RekeyStep) => {
          if (++steps === stop) throw new Error('crash');
        };
        await expect(store.rekeyContactIds(key, crash)).rejects.toThrow('crash');
        await store.rekeyContactIds(key);
        await expectKeyed(store, s, key, key.rewrap(legacyId(s.userId, s.phones.gone)));
        await expectOneTextPerContact(store, s);
      });
    }
  });
}
