import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ALL_SHARDS, inShard, shardLockName, SWEEP_SLOTS, sweepSlot } from '../../src/domain/sweep-shard.js';

const SECRET = { JWT_SECRET: randomBytes(32).toString('hex') };

describe('sweep shards', () => {
  it('a slot is a stable hash of the id, within [0, SWEEP_SLOTS)', () => {
    expect(sweepSlot('tmr_01J0000000000000000000000')).toBe(sweepSlot('tmr_01J0000000000000000000000'));
    // FNV-1a 32-bit of "a" is 0xe40c292c
    expect(sweepSlot('a')).toBe(0xe40c292c % SWEEP_SLOTS);
    for (let i = 0; i < 1000; i++) {
      const s = sweepSlot(`tmr_${i}`);
      expect(Number.isInteger(s) && s >= 0 && s < SWEEP_SLOTS).toBe(true);
    }
  });

  it('time-ordered ids that differ only in their last characters spread evenly over the shards', () => {
    const of = 4;
    const counts = new Array<number>(of).fill(0);
    for (let i = 0; i < 4000; i++) counts[sweepSlot(`tmr_01JE5X${String(i).padStart(6, '0')}`) % of]!++;
    for (const n of counts) expect(n).toBeGreaterThan(800); // 1,000 each when even
  });

  it('every slot is in exactly one shard of a sharding; one shard holds every slot', () => {
    for (const of of [1, 2, 3, 7, 64]) {
      for (let slot = 0; slot < SWEEP_SLOTS; slot++) {
        const owners = Array.from({ length: of }, (_, index) => index).filter((index) => inShard(slot, { index, of }));
        expect(owners).toHaveLength(1);
      }
    }
    expect(inShard(513, ALL_SHARDS)).toBe(true);
  });

  it('shard 0 keeps the configured lock name, so one shard is the unsharded sweep', () => {
    expect(shardLockName('vigil:sweep', { index: 0, of: 4 })).toBe('vigil:sweep');
    expect(shardLockName('vigil:sweep', { index: 3, of: 4 })).toBe('vigil:sweep:3');
  });

  it('SWEEP_SHARDS: default 1; 0, 65 and non-integers are refused with the variable named', () => {
    expect(loadConfig({ ...SECRET }).sweep.shards).toBe(1);
    expect(loadConfig({ ...SECRET, SWEEP_SHARDS: '8' }).sweep.shards).toBe(8);
    for (const bad of ['0', '65', '2.5', 'many']) expect(() => loadConfig({ ...SECRET, SWEEP_SHARDS: bad })).toThrow(/SWEEP_SHARDS/);
  });
});
