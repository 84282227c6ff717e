/**
 * A race peer for the SQLite store that really runs in parallel: a worker thread opens its
 * own SqliteStore on the same file (as a second process on the host would) and runs its
 * step of the race on its own thread. better-sqlite3 is synchronous, so a second
 * connection in the test's own thread would run each call to completion before the next
 * starts and no race would ever happen.
 *
 * Start gate: the worker announces it holds the step, the test names an instant 2 ms
 * ahead on the shared monotonic clock, and both threads spin until then and go. The
 * test's own side then waits a random 0–100 µs more: without it, it won nearly every
 * trial of some races (openIncident 197 of 200, the peer 3), and a run where the peer
 * won none failed the "both sides won some" check that proves a race took place.
 */
import { Worker } from 'node:worker_threads';
import type { SharedClock } from '../helpers/shared-clock.js';
import type { RacePeer, StepArgs, StepName, StepResult } from './race-steps.js';

export const GATE = { idle: 0, arrived: 1, go: 2 } as const;
const LEAD_NS = 2_000_000n;
const MAX_HANDICAP_NS = 100_000;
const GATE_TIMEOUT_MS = 30_000;

export interface PeerWorkerData {
  file: string;
  clock: SharedArrayBuffer;
  gate: SharedArrayBuffer;
}

export type PeerRequest = { kind: 'step'; id: number; step: StepName; args: unknown } | { kind: 'close' };
export type PeerReply =
  | { kind: 'ready' }
  | { kind: 'closed' }
  | { kind: 'result'; id: number; ok: true; value: unknown }
  | { kind: 'result'; id: number; ok: false; error: string };

export const gateViews = (gate: SharedArrayBuffer) => ({ state: new Int32Array(gate, 0, 1), startAt: new BigInt64Array(gate, 8, 1) });

export function spinUntil(at: bigint): void {
  while (process.hrtime.bigint() < at) {
    // busy: a sleep would add the scheduler's wake-up delay to one side only
  }
}

export class SqliteWorkerPeer implements RacePeer {
  readonly ownThread = true;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private nextId = 1;
  private failed: Error | undefined;
  private closed: (() => void) | undefined;

  private constructor(
    private readonly worker: Worker,
    private readonly gate: SharedArrayBuffer,
  ) {
    worker.on('message', (m: PeerReply) => {
      if (m.kind === 'closed') this.closed?.();
      if (m.kind !== 'result') return;
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (m.ok) p?.resolve(m.value);
      else p?.reject(new Error(`peer step failed: ${m.error}`));
    });
    const fail = (e: Error) => {
      this.failed = e;
      for (const p of this.pending.values()) p.reject(e);
      this.pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`peer worker exited (${code})`)));
  }

  static async open(file: string, clock: SharedClock): Promise<SqliteWorkerPeer> {
    const gate = new SharedArrayBuffer(16);
    const data: PeerWorkerData = { file, clock: clock.buffer, gate };
    // Node 20 ignores `--import tsx` in a worker's execArgv: register tsx's loader from inside the worker instead
    const entry = new URL('./sqlite-peer-worker.ts', import.meta.url).href;
    const boot = `import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}); })`;
    const worker = new Worker(boot, { eval: true, workerData: data });
    await new Promise<void>((resolve, reject) => {
      worker.once('error', reject);
      worker.once('message', (m: PeerReply) => (m.kind === 'ready' ? resolve() : reject(new Error(`unexpected ${m.kind}`))));
    });
    return new SqliteWorkerPeer(worker, gate);
  }

  async race<A, K extends StepName>(mine: () => Promise<A>, step: K, args: StepArgs<K>): Promise<[A, StepResult<K>]> {
    if (this.failed) throw this.failed;
    const id = this.nextId++;
    const theirs = new Promise<StepResult<K>>((resolve, reject) =>
      this.pending.set(id, { resolve: (v) => resolve(v as StepResult<K>), reject }),
    );
    this.worker.postMessage({ kind: 'step', id, step, args } satisfies PeerRequest);

    const { state, startAt } = gateViews(this.gate);
    const giveUp = Date.now() + GATE_TIMEOUT_MS;
    while (Atomics.load(state, 0) !== GATE.arrived) {
      if (Date.now() > giveUp) {
        theirs.catch(() => undefined); // its failure, if any, is this one
        throw new Error(`the peer worker did not reach the start gate within ${GATE_TIMEOUT_MS}ms`);
      }
      Atomics.wait(state, 0, GATE.idle, 50);
    }
    const at = process.hrtime.bigint() + LEAD_NS;
    Atomics.store(startAt, 0, at);
    Atomics.store(state, 0, GATE.go);
    Atomics.notify(state, 0);
    spinUntil(at + BigInt(Math.floor(Math.random() * MAX_HANDICAP_NS)));
    return Promise.all([mine(), theirs]);
  }

  async close(): Promise<void> {
    if (!this.failed) {
      const closed = new Promise<void>((resolve) => (this.closed = resolve));
      this.worker.postMessage({ kind: 'close' } satisfies PeerRequest);
      await closed;
    }
    await this.worker.terminate();
  }
}
