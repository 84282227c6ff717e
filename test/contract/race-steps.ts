/**
 * One side of a store race, as plain functions of a Store, so the same step runs on the
 * test's own connection or on a peer in another thread (./sqlite-peer-worker.ts).
 * Arguments and results are structured-clonable: they cross a worker boundary.
 */
import { randomUUID } from 'node:crypto';
import { receiptFrom } from '../../src/domain/delivery.js';
import type { Timer } from '../../src/domain/timer.js';
import type { ArmResult, IdempotencyClaim, NewTimer, ReceiptOutcome, ReceiptStatus, Store } from '../../src/store/port.js';

export interface Claim {
  timerId: string;
  fence: number;
}

const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * A sweeper: claim + open incidents until a claim comes back empty once the store clock
 * is at `notBeforeMs` and no live timer is due any more.
 */
async function sweep(store: Store, a: { fence: number; batch: number; notBeforeMs: number }): Promise<Claim[]> {
  const claims: Claim[] = [];
  for (;;) {
    const timers = await store.claimDueTimers(a.batch, a.fence);
    for (const t of timers) {
      claims.push({ timerId: t.id, fence: a.fence });
      await store.openIncident(t, a.fence, randomUUID());
    }
    if (timers.length > 0) continue;
    if ((await store.now()).getTime() >= a.notBeforeMs && (await store.overdue()).count === 0) return claims;
    await yieldToLoop();
  }
}

/** Check-ins in `lanes` concurrent lanes; answers the ids this side moved to safe. */
async function checkIns(store: Store, a: { timers: { id: string; userId: string }[]; lanes: number }): Promise<string[]> {
  const safe: string[] = [];
  const lanes = Array.from({ length: a.lanes }, (_, i) => a.timers.filter((_, j) => j % a.lanes === i));
  await Promise.all(
    lanes.map(async (lane) => {
      for (const t of lane) if (await store.resolveTimer(t.id, t.userId, 'safe')) safe.push(t.id);
    }),
  );
  return safe;
}

export const raceSteps = {
  arm: (store: Store, a: { timers: NewTimer[] }): Promise<ArmResult['kind'][]> =>
    Promise.all(a.timers.map(async (t) => (await store.armTimer(t)).kind)),
  resolve: (store: Store, a: { id: string; userId: string; to: 'safe' | 'cancelled' }): Promise<Timer | null> =>
    store.resolveTimer(a.id, a.userId, a.to),
  claim: async (store: Store, a: { limit: number; fence: number }): Promise<string[]> =>
    (await store.claimDueTimers(a.limit, a.fence)).map((t) => t.id),
  openIncident: (store: Store, a: { timer: Timer; fence: number; times: number }): Promise<{ created: boolean; incidentId: string }[]> =>
    Promise.all(
      Array.from({ length: a.times }, async () => {
        const r = await store.openIncident(a.timer, a.fence, randomUUID());
        return { created: r.created, incidentId: r.incident.id };
      }),
    ),
  /** `times` retries of one keyed extend at once; answers each result's kind */
  extendKeyed: (
    store: Store,
    a: {
      id: string;
      userId: string;
      seconds: number;
      caps: { maxExtensions: number; maxTotalSeconds: number };
      idem: IdempotencyClaim;
      times: number;
    },
  ): Promise<string[]> =>
    Promise.all(
      Array.from({ length: a.times }, async () => (await store.extendTimerKeyed(a.id, a.userId, a.seconds, a.caps, a.idem)).kind),
    ),
  checkIns,
  sweep,
  /** the panic button for `userId` with a fresh incident id; answers the result's kind */
  panic: async (store: Store, a: { userId: string }): Promise<string> =>
    (await store.raisePanic({ incidentId: randomUUID(), userId: a.userId })).kind,
  /** one warning claim; answers the ids of the timers it warned */
  claimWarnings: async (store: Store, a: { limit: number; beforeMs: number }): Promise<string[]> =>
    (await store.claimWarnings(a.limit, { beforeMs: a.beforeMs, graceMs: 0 })).map((w) => w.timer.id),
  /** a carrier receipt for message `pid`; answers what it did (applied, kept, stale) */
  applyReceipt: async (store: Store, a: { pid: string; to: ReceiptStatus }): Promise<ReceiptOutcome['result']> =>
    (await store.applyReceipt(a.pid, a.to, receiptFrom(a.to))).result,
  /** a contact's YES on an incident; answers whether it was added (null: the incident is not open) */
  addContactAck: async (
    store: Store,
    a: { incidentId: string; contactId: string; name: string; atMs: number; messageSid: string },
  ): Promise<boolean | null> => {
    const out = await store.addContactAck(a.incidentId, {
      contactId: a.contactId,
      name: a.name,
      at: new Date(a.atMs),
      messageSid: a.messageSid,
    });
    return out === null ? null : out.added;
  },
  /** a dispatcher's claim; answers the keys it leased */
  claimDeliveries: async (store: Store, a: { limit: number; leaseMs: number }): Promise<string[]> =>
    (await store.claimDeliveries(a.limit, a.leaseMs)).map((d) => d.key),
};

export type Steps = typeof raceSteps;
export type StepName = keyof Steps;
export type StepArgs<K extends StepName> = Parameters<Steps[K]>[1];
export type StepResult<K extends StepName> = Awaited<ReturnType<Steps[K]>>;

export function runStep<K extends StepName>(store: Store, step: K, args: StepArgs<K>): Promise<StepResult<K>> {
  const fn = raceSteps[step] as (s: Store, a: StepArgs<K>) => Promise<StepResult<K>>;
  return fn(store, args);
}

/**
 * The other side of a race: its own connection to the test's database.
 * `ownThread` says whether it runs in parallel with the test (another thread or process);
 * only then is a race that one side always wins proof that the race did not happen.
 */
export interface RacePeer {
  readonly ownThread: boolean;
  /** Run `mine` here and `step` on the peer, both started as close to the same instant as the peer allows. */
  race<A, K extends StepName>(mine: () => Promise<A>, step: K, args: StepArgs<K>): Promise<[A, StepResult<K>]>;
  close(): Promise<void>;
}

/** A peer on another connection in this process: over an async driver its calls interleave with the test's. */
export function inProcessPeer(store: Store): RacePeer {
  return {
    ownThread: false,
    race: (mine, step, args) => Promise.all([mine(), runStep(store, step, args)]),
    close: () => store.close(),
  };
}
