import { InProcessLock } from '../../src/lock/in-process-lock.js';
import { lockContract } from './lock-contract.js';

// One process has one lock: "another replica" is the same instance. Its clock is the test's.
lockContract('InProcessLock', async () => {
  let now = Date.now();
  const lock = new InProcessLock(() => now);
  return {
    lock,
    other: async () => lock,
    passTime: (ms) => {
      now += ms;
    },
    cleanup: () => lock.close(),
  };
});
