import { describe, expect, it } from 'vitest';
import { InProcessLock } from '../../src/lock/in-process-lock.js';
import { lockContract } from './lock-contract.js';

// One process has one lock: "another replica" is the same instance.
lockContract('InProcessLock', async () => {
  const lock = new InProcessLock();
  return { lock, other: async () => lock, cleanup: () => lock.close() };
});

describe('InProcessLock fences across a restart', () => {
  it('a new process continues above the highest fence recorded in the store, never below', async () => {
    let recorded = 0; // the store's record: the sweeper writes each fence into timers and incidents
    const first = new InProcessLock(Date.now, async () => recorded);
    for (let i = 0; i < 3; i++) {
      const lease = await first.acquire('sweep', 10_000);
      recorded = Math.max(recorded, lease!.fence);
      await lease!.release();
    }
    expect(recorded).toBe(3);
    await first.close();

    const restarted = new InProcessLock(Date.now, async () => recorded);
    const lease = await restarted.acquire('sweep', 10_000);
    expect(lease?.fence).toBe(4);
    await restarted.close();
  });

  it('when the store cannot say its highest fence, acquire throws and the next acquire asks again', async () => {
    let down = true;
    const lock = new InProcessLock(Date.now, async () => {
      if (down) throw new Error('store down');
      return 10;
    });
    await expect(lock.acquire('sweep', 10_000)).rejects.toThrow('store down');
    down = false;
    expect((await lock.acquire('sweep', 10_000))?.fence).toBe(11);
    await lock.close();
  });
});
