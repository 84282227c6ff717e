import { SharedClock } from '../helpers/shared-clock.js';
import { tempSqliteStore } from '../helpers/sqlite-store.js';
import { SqliteWorkerPeer } from './sqlite-peer.js';
import { storeContract } from './store-contract.js';

storeContract('sqlite', async () => {
  const clock = new SharedClock();
  const { store, file, cleanup } = await tempSqliteStore({ clock: clock.now });
  return {
    store,
    // its own connection on the same file, on its own thread, as a second process would open it
    peer: () => SqliteWorkerPeer.open(file, clock),
    passTime: (t) => clock.passTime(t),
    cleanup,
  };
});
