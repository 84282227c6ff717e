/**
 * Contract cases for replies from contacts (issue 37, item 2): contacts found by number across
 * people, and a contact's "I'm on it" recorded once per contact and once per message, raced.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect } from 'vitest';
import { openedIncident, raceIt, type ContractContext } from './store-contract-helpers.js';

const phone = () => `+1415${String(Math.floor(Math.random() * 1e7)).padStart(7, '0')}`;
const sid = () => `SM${randomUUID().replaceAll('-', '')}`;

export function replyCases(ctx: ContractContext): void {
  const it = ctx.it;
  describe('replies from contacts', () => {
    it('contactsWithPhone: every person who saved the number, with the contact as saved; nobody else', async () => {
      const store = ctx.store();
      const shared = phone();
      const [ann, bob, cat] = [randomUUID(), randomUUID(), randomUUID()];
      await store.replaceContacts(ann, [
        { id: 'c_ann1', name: 'Dee', phone: phone() },
        { id: 'c_ann2', name: 'Dee (work)', phone: shared },
      ]);
      await store.replaceContacts(bob, [{ id: 'c_bob1', name: 'Mum', phone: shared, language: 'es' }]);
      await store.replaceContacts(cat, [{ id: 'c_cat1', name: 'Eve', phone: phone() }]);
      await store.setContactState(bob, 'c_bob1', 'confirmed', ['pending']);
      const found = await store.contactsWithPhone(shared);
      expect(found.map((f) => [f.userId, f.contact.id, f.contact.name, f.contact.state]).sort()).toEqual(
        [
          [ann, 'c_ann2', 'Dee (work)', 'pending'],
          [bob, 'c_bob1', 'Mum', 'confirmed'],
        ].sort(),
      );
      expect(found.find((f) => f.userId === bob)?.contact.language).toBe('es');
      expect(await store.contactsWithPhone(phone())).toEqual([]);
      // a list saved without the number no longer answers for it
      await store.replaceContacts(ann, [{ id: 'c_ann1', name: 'Dee', phone: phone() }]);
      expect((await store.contactsWithPhone(shared)).map((f) => f.userId)).toEqual([bob]);
    });

    it('optInContact: back to confirmed when the contact opted out while confirmed, else pending; kept across a re-save', async () => {
      const store = ctx.store();
      const u = randomUUID();
      const list = [
        { id: 'c_conf', name: 'Con', phone: phone() },
        { id: 'c_pend', name: 'Pen', phone: phone() },
      ];
      await store.replaceContacts(u, list);
      await store.setContactState(u, 'c_conf', 'confirmed', ['pending']);
      expect(await store.optInContact(u, 'c_conf')).toBeNull(); // not opted out
      for (const c of list)
        expect((await store.setContactState(u, c.id, 'opted_out', ['pending', 'confirmed', 'declined']))?.state).toBe('opted_out');
      await store.replaceContacts(u, list); // a re-save keeps the state, and what it remembers
      expect((await store.optInContact(u, 'c_conf'))?.state).toBe('confirmed');
      expect((await store.optInContact(u, 'c_pend'))?.state).toBe('pending');
      expect(await store.optInContact(u, 'c_pend')).toBeNull();
      // opted out again from pending: START makes it pending, not what it was two opt-outs ago
      await store.setContactState(u, 'c_conf', 'pending', ['confirmed']);
      await store.setContactState(u, 'c_conf', 'opted_out', ['pending']);
      expect((await store.optInContact(u, 'c_conf'))?.state).toBe('pending');
      // removed and added again: starts over
      await store.setContactState(u, 'c_conf', 'confirmed', ['pending']);
      await store.setContactState(u, 'c_conf', 'opted_out', ['confirmed']);
      await store.replaceContacts(u, [list[1]!]);
      await store.replaceContacts(u, list);
      expect((await store.getContacts(u)).map((c) => c.state)).toEqual(['pending', 'pending']);
      expect(await store.optInContact(u, 'c_conf')).toBeNull();
      expect(await store.optInContact(randomUUID(), 'c_conf')).toBeNull();
    });

    it('addContactAck: once per contact and per message; shown on the incident; null once closed or unknown', async () => {
      const store = ctx.store();
      const { incident } = await openedIncident(store);
      const at = await store.now();
      const first = { contactId: 'c_a', name: 'Ana', at, messageSid: sid() };
      const a = await store.addContactAck(incident.id, first);
      expect(a?.added).toBe(true);
      expect(a?.incident.contactAcks).toEqual([first]);
      // the same webhook again, and a second YES from the same contact: nothing added
      expect((await store.addContactAck(incident.id, first))?.added).toBe(false);
      expect((await store.addContactAck(incident.id, { ...first, messageSid: sid() }))?.added).toBe(false);
      // a message id already recorded does not count for another contact either
      expect((await store.addContactAck(incident.id, { ...first, contactId: 'c_x' }))?.added).toBe(false);
      const b = await store.addContactAck(incident.id, { contactId: 'c_b', name: 'Ben', at, messageSid: sid() });
      expect(b?.added).toBe(true);
      const got = await store.getIncident(incident.id);
      expect(got?.contactAcks?.map((x) => x.contactId)).toEqual(['c_a', 'c_b']);
      expect(got?.contactAcks?.[0]?.at.getTime()).toBe(at.getTime());
      // the moderator's acknowledgement is another thing: untouched
      expect(got?.status).toBe('active');
      expect(got?.acknowledgedBy).toBeUndefined();

      expect(await store.addContactAck(randomUUID(), { ...first, messageSid: sid() })).toBeNull();
      await store.transitionIncident(incident.id, ['active', 'acknowledged'], 'resolved', 'mod');
      expect(await store.addContactAck(incident.id, { contactId: 'c_c', name: 'Cal', at, messageSid: sid() })).toBeNull();
      expect((await store.getIncident(incident.id))?.contactAcks).toHaveLength(2);
    });
  });

  describe('replies from contacts, raced', () => {
    raceIt(ctx)(
      'two contacts answering at once are both recorded; the same message raced from two sides is recorded once',
      async () => {
        const store = ctx.store();
        const peer = await ctx.peer();
        for (let trial = 0; trial < 10; trial++) {
          const { incident } = await openedIncident(store);
          const atMs = (await store.now()).getTime();
          const [mine, theirs] = await peer.race(
            () => store.addContactAck(incident.id, { contactId: 'c_a', name: 'Ana', at: new Date(atMs), messageSid: sid() }),
            'addContactAck',
            { incidentId: incident.id, contactId: 'c_b', name: 'Ben', atMs, messageSid: sid() },
          );
          expect([mine?.added, theirs]).toEqual([true, true]);
          expect((await store.getIncident(incident.id))?.contactAcks?.map((x) => x.contactId).sort()).toEqual(['c_a', 'c_b']);

          const repeated = sid();
          const [here, there] = await peer.race(
            () => store.addContactAck(incident.id, { contactId: 'c_c', name: 'Cal', at: new Date(atMs), messageSid: repeated }),
            'addContactAck',
            { incidentId: incident.id, contactId: 'c_c', name: 'Cal', atMs, messageSid: repeated },
          );
          expect([here?.added, there].filter((x) => x === true)).toHaveLength(1);
          const acks = (await store.getIncident(incident.id))?.contactAcks ?? [];
          expect(acks.filter((x) => x.contactId === 'c_c')).toHaveLength(1);
          expect(acks).toHaveLength(3);
        }
      },
      60_000,
    );
  });
}
