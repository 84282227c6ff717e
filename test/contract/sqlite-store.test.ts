import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { SharedClock } from '../helpers/shared-clock.js';
import { SqliteWorkerPeer } from './sqlite-peer.js';
import { storeContract } from './store-contract.js';

storeContract('sqlite', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'vigil-'));
  const file = path.join(dir, 'vigil.db');
  const clock = new SharedClock();
  const store = await SqliteStore.open({ file, clock: clock.now });
  return {
    store,
    // its own connection on the same file, on its own thread, as a second process would open it
    peer: () => SqliteWorkerPeer.open(file, clock),
    passTime: (t) => clock.passTime(t),
    cleanup: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
