import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { storeContract } from './store-contract.js';

storeContract('sqlite', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'vigil-'));
  const file = path.join(dir, 'vigil.db');
  const store = await SqliteStore.open({ file });
  return {
    store,
    // another connection on the same file, as a second process would open it
    peer: () => SqliteStore.open({ file }),
    cleanup: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
