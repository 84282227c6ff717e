/**
 * The cross-replica "sweep is behind" signal: true only while the oldest live deadline is
 * past by more than the threshold; read at most every `refreshMs`; a store error is "not behind".
 */
import { describe, expect, it } from 'vitest';
import { SweepBacklog } from '../../src/worker/sweep-backlog.js';

function setup(next: () => Date | null | Error) {
  let t = 0;
  const store = {
    now: async () => new Date(100_000),
    nextDeadline: async () => {
      const v = next();
      if (v instanceof Error) throw v;
      return v;
    },
  };
  const b = new SweepBacklog(store, { behindMs: 250, refreshMs: 100 }, () => t);
  const settle = () => new Promise((r) => setImmediate(r));
  return { b, at: (ms: number) => (t = ms), settle };
}

describe('SweepBacklog', () => {
  it('behind while the oldest live deadline is more than behindMs past', async () => {
    const { b, settle } = setup(() => new Date(100_000 - 1000));
    expect(b.behind()).toBe(false); // nothing read yet
    await settle();
    expect(b.behind()).toBe(true);
  });

  it('not behind when the sweep keeps up, when no timer is live, or when the store fails', async () => {
    for (const next of [() => new Date(100_000 - 200), () => null, () => new Error('store down')]) {
      const { b, settle } = setup(next);
      b.behind();
      await settle();
      expect(b.behind()).toBe(false);
    }
  });

  it('asks the store at most every refreshMs', async () => {
    let reads = 0;
    const { b, at, settle } = setup(() => {
      reads++;
      return new Date(100_000 - 1000);
    });
    for (let ms = 0; ms < 1000; ms += 10) {
      at(ms);
      b.behind();
      await settle();
    }
    expect(reads).toBe(10);
  });
});
