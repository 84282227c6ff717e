/** Contract cases for incidents and contacts. */
import { randomUUID } from 'node:crypto';
import { describe, expect } from 'vitest';
import type { Contact } from '../../src/domain/contact.js';
import { arm, openedIncident, raceIt, type ContractContext } from './store-contract-helpers.js';

export function incidentCases(ctx: ContractContext): void {
  const it = ctx.it;
  describe('incidents', () => {
    it('invariant 3: openIncident creates the incident once; a second call (another proposed id) returns the same one', async () => {
      const store = ctx.store();
      const spec = { locationName: 'Blue Bottle Café', location: { lat: 37.77493, lng: -122.41942 }, displayName: 'Alice' };
      await arm(store, { ...spec, startOffsetMs: -120_000, expiresInMs: -1_000 });
      const [timer] = await store.claimDueTimers(10, 5);
      if (!timer) throw new Error('nothing claimed');
      const id = randomUUID();
      const first = await store.openIncident(timer, 5, id);
      expect(first.created).toBe(true);
      const incident = first.incident;
      expect(incident).toMatchObject({
        id,
        timerId: timer.id,
        userId: timer.userId,
        status: 'active',
        deadline: timer.expiresAt,
        fence: 5,
        ...spec,
      });
      expect(incident.createdAt).toBeInstanceOf(Date);
      const again = await store.openIncident(timer, 6, randomUUID());
      expect(again).toEqual({ incident, created: false });
      expect(await store.incidentForTimer(timer.id)).toEqual(incident);
      expect(await store.getIncident(incident.id)).toEqual(incident);
      expect(await store.listIncidents()).toEqual([incident]);
      expect(await store.getIncident(randomUUID())).toBeNull();
      expect(await store.incidentForTimer(randomUUID())).toBeNull();
    });

    it('transitionIncident is a CAS: active → acknowledged → resolved records who and when; a wrong `from` → null', async () => {
      const store = ctx.store();
      const { incident } = await openedIncident(store);
      expect(await store.transitionIncident(incident.id, ['acknowledged'], 'resolved', 'mod1')).toBeNull();
      const acked = await store.transitionIncident(incident.id, ['active'], 'acknowledged', 'mod1');
      expect(acked).toMatchObject({ id: incident.id, status: 'acknowledged', acknowledgedBy: 'mod1' });
      expect(acked?.acknowledgedAt).toBeInstanceOf(Date);
      expect(await store.transitionIncident(incident.id, ['active'], 'acknowledged', 'mod2')).toBeNull();
      const resolved = await store.transitionIncident(incident.id, ['active', 'acknowledged'], 'resolved', 'mod2');
      expect(resolved).toMatchObject({ status: 'resolved', resolvedBy: 'mod2', acknowledgedBy: 'mod1' });
      expect(resolved?.resolvedAt).toBeInstanceOf(Date);
      expect(await store.transitionIncident(incident.id, ['active', 'acknowledged'], 'false_alarm', 'u')).toBeNull();
      expect(await store.getIncident(incident.id)).toEqual(resolved);
      expect(await store.transitionIncident(randomUUID(), ['active'], 'acknowledged', 'mod1')).toBeNull();
    });

    it('listIncidents filters by status and by `since` (strictly after)', async () => {
      const store = ctx.store();
      const a = (await openedIncident(store)).incident;
      const b = (await openedIncident(store)).incident;
      const latest = new Date(Math.max(a.updatedAt.getTime(), b.updatedAt.getTime()));
      await ctx.passTime(latest);
      const acked = await store.transitionIncident(a.id, ['active'], 'acknowledged', 'mod1');
      if (!acked) throw new Error('ack failed');
      expect((await store.listIncidents()).map((i) => i.id).sort()).toEqual([a.id, b.id].sort());
      expect((await store.listIncidents({ status: 'active' })).map((i) => i.id)).toEqual([b.id]);
      expect((await store.listIncidents({ status: 'acknowledged' })).map((i) => i.id)).toEqual([a.id]);
      expect(await store.listIncidents({ status: 'resolved' })).toEqual([]);
      expect((await store.listIncidents({ since: latest })).map((i) => i.id)).toEqual([a.id]);
      expect(await store.listIncidents({ since: acked.updatedAt })).toEqual([]);
    });
  });

  describe('contacts', () => {
    const contact = (name: string, phone: string): Contact => ({ id: `c_${randomUUID().slice(0, 16)}`, name, phone });
    // as the store answers: a contact it had not seen is pending
    const stored = (...cs: Contact[]): Contact[] => cs.map((c) => ({ ...c, state: c.state ?? 'pending' }));

    it('replaceContacts replaces the whole list; getContacts keeps the given order', async () => {
      const store = ctx.store();
      const userId = randomUUID();
      expect(await store.getContacts(userId)).toEqual([]);
      const [a, b, c] = [contact('Ann', '+14155550101'), contact('Bob', '+447911123456'), contact('Cy', '+919876543210')];
      expect(await store.replaceContacts(userId, [a, b, c])).toEqual(stored(a, b, c));
      expect(await store.getContacts(userId)).toEqual(stored(a, b, c));
      expect(await store.replaceContacts(userId, [c, a])).toEqual(stored(c, a));
      expect(await store.getContacts(userId)).toEqual(stored(c, a));
      expect(await store.replaceContacts(userId, [])).toEqual([]);
      expect(await store.getContacts(userId)).toEqual([]);
    });

    it('invariant 7: each person’s list is separate', async () => {
      const store = ctx.store();
      const [u1, u2] = [randomUUID(), randomUUID()];
      const one = [contact('Ann', '+14155550101')];
      const two = [contact('Bob', '+14155550102'), contact('Cy', '+14155550103')];
      await store.replaceContacts(u1, one);
      await store.replaceContacts(u2, two);
      await store.replaceContacts(u1, []);
      expect(await store.getContacts(u1)).toEqual([]);
      expect(await store.getContacts(u2)).toEqual(stored(...two));
    });

    it('keeps each contact’s language and the person’s defaults with the list, replaced with it; contactSettingsOf reads many', async () => {
      const store = ctx.store();
      const [u1, u2, none] = [randomUUID(), randomUUID(), randomUUID()];
      const es: Contact = { ...contact('Carmen', '+34600000001'), language: 'es' };
      const plain = contact('Tom', '+14155550101');
      expect(await store.getContactSettings(u1)).toEqual({});
      expect(await store.replaceContacts(u1, [es, plain], { language: 'es', timeZone: 'Europe/Madrid' })).toEqual(stored(es, plain));
      expect(await store.getContacts(u1)).toEqual(stored(es, plain));
      expect(await store.getContactSettings(u1)).toEqual({ language: 'es', timeZone: 'Europe/Madrid' });
      await store.replaceContacts(u2, [plain], { timeZone: 'America/Bogota' });
      const many = await store.contactSettingsOf([u1, u2, none]);
      expect(Object.fromEntries(many)).toEqual({
        [u1]: { language: 'es', timeZone: 'Europe/Madrid' },
        [u2]: { timeZone: 'America/Bogota' },
        [none]: {},
      });
      // replaced whole: defaults not given are gone
      await store.replaceContacts(u1, [plain]);
      expect(await store.getContactSettings(u1)).toEqual({});
      expect((await store.contactsOf([u1])).get(u1)).toEqual(stored(plain));
    });

    it('a contact keeps its state when the list is saved again; a new or re-added one is pending; setContactState is a CAS', async () => {
      const store = ctx.store();
      const userId = randomUUID();
      const [a, b] = [contact('Ann', '+14155550101'), contact('Bob', '+14155550102')];
      await store.replaceContacts(userId, [a, b]);
      expect(await store.setContactState(userId, a.id, 'confirmed', ['pending'])).toEqual({ ...a, state: 'confirmed' });
      expect(await store.setContactState(userId, b.id, 'opted_out', ['pending', 'confirmed'])).toEqual({ ...b, state: 'opted_out' });
      // not from a state it is not in; not for a contact not on the list
      expect(await store.setContactState(userId, a.id, 'declined', ['pending'])).toBeNull();
      expect(await store.setContactState(userId, 'c_nobody', 'confirmed', ['pending'])).toBeNull();
      expect(await store.setContactState(randomUUID(), a.id, 'confirmed', ['pending'])).toBeNull();
      // saved again (renamed, reordered, a state given by the caller is ignored): the states stay
      const renamed = { ...a, name: 'Ann B.', state: 'declined' as const };
      expect(await store.replaceContacts(userId, [b, renamed])).toEqual([
        { ...b, state: 'opted_out' },
        { ...a, name: 'Ann B.', state: 'confirmed' },
      ]);
      // removed, then added again: pending
      await store.replaceContacts(userId, [b]);
      expect((await store.replaceContacts(userId, [b, a])).map((c) => c.state)).toEqual(['opted_out', 'pending']);
      expect((await store.contactsOf([userId])).get(userId)?.map((c) => c.state)).toEqual(['opted_out', 'pending']);
    });

    raceIt(ctx)('a state change racing a save of the list is neither lost nor resurrected', async () => {
      const store = ctx.store();
      const userId = randomUUID();
      const a = contact('Ann', '+14155550101');
      for (let i = 0; i < 10; i++) {
        await store.replaceContacts(userId, [a]);
        await store.setContactState(userId, a.id, 'pending', ['confirmed', 'opted_out']);
        const [, moved] = await Promise.all([
          store.replaceContacts(userId, [{ ...a, name: `Ann ${i}` }]),
          store.setContactState(userId, a.id, 'opted_out', ['pending']),
        ]);
        expect(moved?.state).toBe('opted_out');
        expect((await store.getContacts(userId))[0]?.state).toBe('opted_out');
      }
    });
  });
}
