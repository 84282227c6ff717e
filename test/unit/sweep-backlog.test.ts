/**
 * The cross-replica "sweep is behind" signal: true only while the oldest live deadline is
 * past by more than the threshold; read at most every `refreshMs`, and read again before
 * answering when the last read is older; a store error is "not behind".
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
  return { b, at: (ms: number) => (t = ms) };
}

describe('SweepBacklog', () => {
  it('behind while the oldest live deadline is more than behindMs past', async () => {
    const { b } = setup(() => new Date(100_000 - 1000));
    expect(await b.behind()).toBe(true);
  });

  it('the first answer after a quiet spell is read fresh, not the one cached before the burst began', async () => {
    let deadline = new Date(100_000 + 60_000); // nothing due yet
    const { b, at } = setup(() => deadline);
    at(0);
    expect(await b.behind()).toBe(false);
    deadline = new Date(100_000 - 1000); // a burst fell due, a second ago
    at(5_000); // the next claim comes long after the last read
    expect(await b.behind()).toBe(true);
  });

  it('not behind when the sweep keeps up, when no timer is live, or when the store fails', async () => {
    for (const next of [() => new Date(100_000 - 200), () => null, () => new Error('store down')]) {
      const { b } = setup(next);
      expect(await b.behind()).toBe(false);
    }
  });

  it('asks the store at most every refreshMs', async () => {
    let reads = 0;
    const { b, at } = setup(() => {
      reads++;
      return new Date(100_000 - 1000);
    });
    for (let ms = 0; ms < 1000; ms += 10) {
      at(ms);
      expect(await b.behind()).toBe(true);
    }
    expect(reads).toBe(10);
    // callers at the same moment share one read
    at(5_000);
    expect(await Promise.all([b.behind(), b.behind(), b.behind()])).toEqual([true, true, true]);
    expect(reads).toBe(11);
  });
});
