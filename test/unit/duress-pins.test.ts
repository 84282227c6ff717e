/**
 * The duress PIN's hashing (src/app/duress.ts) against a plain in-memory store: the PIN is
 * never stored, each person gets their own salt, and checking a PIN costs one hash whether
 * or not the person set one (the decoy), so the answer's timing cannot tell. Real scrypt,
 * at a low cost to keep the test quick.
 */
import { describe, expect, it } from 'vitest';
import { DuressPins, hashPin } from '../../src/app/duress.js';
import type { DuressSecret, DuressStore } from '../../src/store/port-duress.js';

function memoryStore(): DuressStore & { rows: Map<string, DuressSecret> } {
  const rows = new Map<string, DuressSecret>();
  return {
    rows,
    setDuressPin: async (u, s) => void rows.set(u, s),
    getDuressPin: async (u) => rows.get(u) ?? null,
    deleteDuressPin: async (u) => rows.delete(u),
  };
}

describe('duress PIN hashing', () => {
  const COST = 1024;

  it('stores a salted scrypt hash, never the PIN; the same PIN of two people hashes differently', async () => {
    const store = memoryStore();
    const pins = new DuressPins(store, COST);
    await pins.set('ann', '4711');
    await pins.set('bob', '4711');
    const ann = store.rows.get('ann');
    const bob = store.rows.get('bob');
    expect(JSON.stringify([...store.rows])).not.toContain('4711');
    expect(ann?.cost).toBe(COST);
    expect(Buffer.from(ann?.salt ?? '', 'base64')).toHaveLength(16);
    expect(ann?.salt).not.toBe(bob?.salt);
    expect(ann?.hash).not.toBe(bob?.hash);
    expect((await hashPin('4711', Buffer.from(ann?.salt ?? '', 'base64'), COST)).toString('base64')).toBe(ann?.hash);
  });

  it('matches only the person’s own duress PIN; a removed PIN no longer matches', async () => {
    const pins = new DuressPins(memoryStore(), COST);
    await pins.set('ann', '4711');
    expect(await pins.matches('ann', '4711')).toBe(true);
    expect(await pins.matches('ann', '4712')).toBe(false);
    expect(await pins.matches('ann', '47110')).toBe(false);
    expect(await pins.matches('bob', '4711')).toBe(false);
    expect(await pins.remove('ann')).toBe(true);
    expect(await pins.matches('ann', '4711')).toBe(false);
  });

  it('checking a PIN hashes once, at the same cost, whether or not the person set one', async () => {
    const calls: { who: string; cost: number }[] = [];
    let who = '';
    const counting = (pin: string, salt: Buffer, cost: number) => (calls.push({ who, cost }), hashPin(pin, salt, cost));
    const pins = new DuressPins(memoryStore(), COST, counting);
    await pins.set('ann', '4711');
    calls.length = 0;
    for (const [user, pin] of [
      ['ann', '4711'],
      ['ann', '0000'],
      ['nobody', '4711'],
      ['nobody', '0000'],
    ] as const) {
      who = `${user}:${pin}`;
      await pins.matches(user, pin);
    }
    expect(calls).toEqual([
      { who: 'ann:4711', cost: COST },
      { who: 'ann:0000', cost: COST },
      { who: 'nobody:4711', cost: COST },
      { who: 'nobody:0000', cost: COST },
    ]);
  });
});
