/** Contract cases for the duress PIN: one hash per person, replaced whole, removed. */
import { randomUUID } from 'node:crypto';
import { describe, expect } from 'vitest';
import type { ContractContext } from './store-contract-helpers.js';

const person = (tag: string) => `duress-${tag}-${randomUUID().slice(0, 8)}`;

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
  });
}
