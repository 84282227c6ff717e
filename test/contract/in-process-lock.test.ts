import { InProcessLock } from '../../src/lock/in-process-lock.js';
import { lockContract } from './lock-contract.js';

// One process has one lock: "another replica" is the same instance.
lockContract('InProcessLock', async () => {
  const lock = new InProcessLock();
  return { lock, other: async () => lock, cleanup: () => lock.close() };
});
