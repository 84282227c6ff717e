/**
 * Contract cases for the duress PIN: one hash per person, replaced whole, removed; and the silent
 * SOS a duress check-in owes, recorded by the resolving CAS itself (invariant 4).
 */
import { randomUUID } from 'node:crypto';
import { describe, expect } from 'vitest';
import type { SosRecipient } from '../../src/store/port-batch.js';
import type { Store } from '../../src/store/port.js';
import { arm, armDue, type ContractContext } from './store-contract-helpers.js';

const person = (tag: string) => `duress-${tag}-${randomUUID().slice(0, 8)}`;

const two: SosRecipient[] = [0, 1].map((i) => ({ contactId: `c${i}`, contactName: `C${i}`, phone: `+1415555${1000 + i}`, body: 'sos' }));

/** A due timer of `userId`, claimed by a sweep (expired, escalation pending, not escalated yet). */
async function swept(store: Store, userId: string) {
  const due = await armDue(store, userId);
  const [timer] = (await store.claimDueTimers(1000, 7)).filter((t) => t.id === due.id);
  expect(timer).toBeDefined();
  return timer!;
}

export function duressCases(ctx: ContractContext): void {
  const it = ctx.it;
  describe('duress PIN', () => {
    it('set, read, replace and delete one person’s duress PIN hash; other people are untouched', async () => {
      const store = ctx.store();
      const ann = person('ann');
      const bob = person('bob');
      expect(await store.getDuressPin(ann)).toBeNull();
      await store.setDuressPin(ann, { salt: 'c2FsdA==', hash: 'aGFzaA==', cost: 16384 });
      await store.setDuressPin(bob, { salt: 'Ym9i', hash: 'Ym9iaGFzaA==', cost: 16384 });
      expect(await store.getDuressPin(ann)).toEqual({ salt: 'c2FsdA==', hash: 'aGFzaA==', cost: 16384 });
      // a new PIN replaces the whole record, salt included
      await store.setDuressPin(ann, { salt: 'bmV3', hash: 'bmV3aGFzaA==', cost: 32768 });
      expect(await store.getDuressPin(ann)).toEqual({ salt: 'bmV3', hash: 'bmV3aGFzaA==', cost: 32768 });
      expect(await store.deleteDuressPin(ann)).toBe(true);
      expect(await store.getDuressPin(ann)).toBeNull();
      // deleting again is a no-op that says so
      expect(await store.deleteDuressPin(ann)).toBe(false);
      expect(await store.getDuressPin(bob)).toEqual({ salt: 'Ym9i', hash: 'Ym9iaGFzaA==', cost: 16384 });
    });

    it('invariant 4: the resolving CAS under duress records the owed SOS in the same write (keyed or not); listed until marked raised, which leaves updatedAt alone', async () => {
      const store = ctx.store();
      const ann = person('owed');
      const mine = async () => (await store.pendingDuress(1000)).filter((t) => t.userId === ann).map((t) => t.id);

      // a genuine check-in owes nothing
      const genuine = await arm(store, { userId: ann });
      expect((await store.resolveTimer(genuine.id, ann, 'safe'))?.duressPending).toBeUndefined();
      expect(await mine()).toEqual([]);

      const plain = await arm(store, { userId: ann });
      const resolved = await store.resolveTimer(plain.id, ann, 'safe', { duress: true });
      expect(resolved).toMatchObject({ status: 'safe', duressPending: true });
      expect(await mine()).toEqual([plain.id]);

      const keyedOne = await arm(store, { userId: ann });
      const idem = { key: randomUUID(), fingerprint: 'fp-cancel' };
      const r = await store.resolveTimerKeyed(keyedOne.id, ann, 'cancelled', idem, { duress: true });
      expect(r).toMatchObject({ kind: 'applied', timer: { status: 'cancelled', duressPending: true } });
      // a replay of the key sees what is still owed (it may complete it)
      expect(await store.resolveTimerKeyed(keyedOne.id, ann, 'cancelled', idem, { duress: true })).toMatchObject({
        kind: 'replayed',
        timer: { duressPending: true },
      });
      expect((await mine()).sort()).toEqual([plain.id, keyedOne.id].sort());

      const before = (await store.getTimer(plain.id))!;
      expect(await store.markDuressRaised(plain.id)).toBe(true);
      expect(await store.markDuressRaised(plain.id)).toBe(false);
      const after = (await store.getTimer(plain.id))!;
      expect(after.duressPending).toBeUndefined();
      // the person's change feed must not show a write they cannot see
      expect(after.updatedAt.getTime()).toBe(before.updatedAt.getTime());
      expect(await mine()).toEqual([keyedOne.id]);
      expect(await store.markDuressRaised(keyedOne.id)).toBe(true);
      expect(await mine()).toEqual([]);
      expect(await store.markDuressRaised(genuine.id)).toBe(false);
    });

    it('a duress SOS never takes over the person’s live timer (the phone would see it expire): an incident of its own, the timer stays live', async () => {
      const store = ctx.store();
      const bob = person('live');
      const live = await arm(store, { userId: bob });
      const r = await store.raisePanic({ incidentId: `drs_${randomUUID()}`, userId: bob, source: 'duress' });
      expect(r.kind).toBe('created');
      expect(r.kind === 'created' ? r.timer : 'n/a').toBeUndefined();
      expect((await store.getTimer(live.id))?.status).toBe(live.status);
    });

    it('DURESS_TEXT_CONTACTS=false: the escalation of a timer a duress check-in took over (its own incident is the duress one) adds no delivery; with the setting on, or for a timer SOS, it does', async () => {
      const store = ctx.store();
      const batch = (timer: Awaited<ReturnType<typeof swept>>, duressTexts: boolean) =>
        store.escalateBatch([{ timer, fence: 7, incidentId: `inc-${randomUUID()}`, recipients: two, duressTexts }]);
      const takeOver = async (userId: string, timerId: string) => {
        const r = await store.raisePanic({ incidentId: `drs_${randomUUID()}`, userId, source: 'duress' });
        expect(r).toMatchObject({ kind: 'created', timer: { id: timerId } });
        return r.kind === 'created' ? r.incident.id : '';
      };

      const quiet = person('quiet');
      const t1 = await swept(store, quiet);
      const drs = await takeOver(quiet, t1.id);
      const [r1] = await batch(t1, false);
      expect(r1).toMatchObject({ created: false, marked: true, incident: { id: drs } });
      expect(await store.deliveriesFor([drs])).toEqual([]);

      const loud = person('loud');
      const t2 = await swept(store, loud);
      const drs2 = await takeOver(loud, t2.id);
      expect((await batch(t2, true))[0]?.incident.id).toBe(drs2);
      expect(await store.deliveriesFor([drs2])).toHaveLength(2);

      // a timer's own SOS is not a duress one: texted whatever the setting
      const plain = person('plain');
      const [r3] = await batch(await swept(store, plain), false);
      expect(r3?.created).toBe(true);
      expect(await store.deliveriesFor([r3!.incident.id])).toHaveLength(2);
    });
  });
}
