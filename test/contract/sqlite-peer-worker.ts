/** The worker side of ./sqlite-peer.ts: its own SqliteStore on the test's file, one step per message. */
import { parentPort, workerData } from 'node:worker_threads';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { SharedClock } from '../helpers/shared-clock.js';
import { runStep } from './race-steps.js';
import { GATE, gateViews, spinUntil, type PeerReply, type PeerRequest, type PeerWorkerData } from './sqlite-peer.js';

const port = parentPort;
if (!port) throw new Error('sqlite-peer-worker runs as a worker thread');
const data = workerData as PeerWorkerData;
const store = await SqliteStore.open({ file: data.file, clock: new SharedClock(data.clock).now });
const { state, startAt } = gateViews(data.gate);
const reply = (m: PeerReply) => port.postMessage(m);

/** Announce arrival, wait for the test's go, then spin to the agreed instant. */
function startGate(): void {
  Atomics.store(state, 0, GATE.arrived);
  Atomics.notify(state, 0);
  if (Atomics.wait(state, 0, GATE.arrived, 30_000) === 'timed-out') throw new Error('no go from the test within 30s');
  Atomics.store(state, 0, GATE.idle);
  spinUntil(Atomics.load(startAt, 0));
}

port.on('message', (m: PeerRequest) => {
  if (m.kind === 'close') {
    void store.close().then(() => reply({ kind: 'closed' }));
    return;
  }
  const run = async () => {
    startGate();
    return runStep(store, m.step, m.args as never);
  };
  run().then(
    (value) => reply({ kind: 'result', id: m.id, ok: true, value }),
    (e: unknown) => reply({ kind: 'result', id: m.id, ok: false, error: e instanceof Error ? (e.stack ?? e.message) : String(e) }),
  );
});
reply({ kind: 'ready' });
