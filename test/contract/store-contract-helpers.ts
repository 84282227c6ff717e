/** Shared fixtures and small helpers of the store contract suite. */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { deliveryKey } from '../../src/domain/delivery.js';
import type { Incident } from '../../src/domain/incident.js';
import type { Timer } from '../../src/domain/timer.js';
import type { NewDelivery, NewTimer, Store } from '../../src/store/port.js';
import type { RacePeer } from './race-steps.js';

export interface StoreFixture {
  store: Store;
  /** the other side of race cases: its own connection to the SAME database (another process's view) */
  peer?: () => Promise<RacePeer>;
  /**
   * Move the store's clock strictly past `t`, for stores built on an injected clock, or
   * wait for every clock the store stamps with to pass it (a server that stamps writes
   * itself). Without it the contract waits for the store's own clock to get there.
   */
  passTime?: (t: Date) => void | Promise<void>;
  cleanup: () => Promise<void>;
}

export interface ContractOptions {
  /** reason the adapter cannot prove atomic CAS races; when set, race cases skip with this reason */
  racesUnsupported?: string;
  /**
   * Non-race cases this adapter's server cannot run, keyed `"<group> › <case title>"`
   * (group = the enclosing describe), with the reason shown in the skipped test's name.
   * A key that names no case is an error.
   */
  skip?: Record<string, string>;
}

/** `it` for contract cases: honours `ContractOptions.skip`. */
export type CaseIt = (title: string, fn: () => Promise<void>, timeoutMs?: number) => void;

/** What each group of cases sees: the current test's store, and a peer view of the same database. */
export interface ContractContext {
  name: string;
  opts: ContractOptions;
  /** declare a case (skipped with its reason when listed in `opts.skip`) */
  it: CaseIt;
  store(): Store;
  /** the adapter's race peer, else one over the test's own store */
  peer(): Promise<RacePeer>;
  /** until the store's clock is strictly after `t`: moved there when the fixture can, else waited for */
  passTime(t: Date): Promise<void>;
}

/** `it` for a race case: skipped, with the reason in its title, on an adapter that cannot make CAS atomic (FerretDB v1). */
export function raceIt(ctx: ContractContext): CaseIt {
  const reason = ctx.opts.racesUnsupported;
  return (title, fn, timeoutMs) => (reason ? it.skip(`[skipped on ${ctx.name}: ${reason}] ${title}`, fn) : it(title, fn, timeoutMs));
}

export const at = (d: Date, ms: number): Date => new Date(d.getTime() + ms);

/** Wait (real time) until the store's clock has passed `t`: for stores whose clock is the server's. */
export async function untilAfter(store: Store, t: Date, maxWaitMs = 10_000): Promise<void> {
  const giveUp = Date.now() + maxWaitMs;
  while ((await store.now()).getTime() <= t.getTime()) {
    if (Date.now() > giveUp) throw new Error(`store clock did not pass ${t.toISOString()} within ${maxWaitMs}ms`);
    await sleep(5);
  }
}

export interface TimerSpec {
  userId?: string;
  /** start offset from the store's now, ms (default 0) */
  startOffsetMs?: number;
  /** deadline offset from the store's now, ms (default +1h) */
  expiresInMs?: number;
  locationName?: string;
  location?: { lat: number; lng: number };
  displayName?: string;
}

export async function newTimer(store: Store, spec: TimerSpec = {}): Promise<NewTimer> {
  const now = await store.now();
  const t: NewTimer = {
    id: randomUUID(),
    userId: spec.userId ?? randomUUID(),
    startedAt: at(now, spec.startOffsetMs ?? 0),
    expiresAt: at(now, spec.expiresInMs ?? 3_600_000),
  };
  if (spec.locationName !== undefined) t.locationName = spec.locationName;
  if (spec.location !== undefined) t.location = spec.location;
  if (spec.displayName !== undefined) t.displayName = spec.displayName;
  return t;
}

/** Arm a timer and insist it was created. */
export async function arm(store: Store, spec: TimerSpec = {}): Promise<Timer> {
  const r = await store.armTimer(await newTimer(store, spec));
  if (r.kind !== 'created') throw new Error(`expected created, got ${r.kind}`);
  return r.timer;
}

/** A live timer whose deadline passed a second ago. */
export const armDue = (store: Store, userId?: string): Promise<Timer> =>
  arm(store, { userId, startOffsetMs: -120_000, expiresInMs: -1_000 });

/** An expired timer (claimed by a sweep with `fence`) and its incident. */
export async function openedIncident(store: Store, spec: TimerSpec = {}, fence = 1): Promise<{ timer: Timer; incident: Incident }> {
  const armed = await arm(store, { startOffsetMs: -120_000, expiresInMs: -1_000, ...spec });
  const claimed = await store.claimDueTimers(1000, fence);
  const timer = claimed.find((t) => t.id === armed.id);
  if (!timer) throw new Error('the due timer was not claimed');
  const { incident } = await store.openIncident(timer, fence, randomUUID());
  return { timer, incident };
}

export function newDeliveries(incidentId: string, n: number, kind: NewDelivery['kind'] = 'sos'): NewDelivery[] {
  return Array.from({ length: n }, (_, i) => {
    const contactId = `c_${randomUUID().slice(0, 8)}`;
    return {
      key: deliveryKey(incidentId, contactId, kind),
      contactId,
      contactName: `Contact ${i}`,
      phone: `+1415555${String(1000 + i)}`,
      kind,
      body: `SOS body ${i}`,
    };
  });
}

export function shuffle<T>(xs: T[]): T[] {
  const a = [...xs];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j] as T, a[i] as T];
  }
  return a;
}

export function countBy<T>(xs: readonly T[], key: (x: T) => string): Map<string, number> {
  const m = new Map<string, number>();
  for (const x of xs) m.set(key(x), (m.get(key(x)) ?? 0) + 1);
  return m;
}

/** Who won how many trials; logged always, and both must be > 0 when the peer runs in parallel. */
export class Split {
  mine = 0;
  theirs = 0;
  constructor(
    private readonly ctx: ContractContext,
    private readonly what: string,
  ) {}

  /**
   * Run `trial` at least `min` times and, when the peer runs in parallel and one side has not
   * won yet, on until both have or `5 × min` trials have run: some races stay skewed toward
   * one side (claims about 190/10), and a run where the rarer side won none of the first `min`
   * proved nothing but is not a defect. Every trial checks the invariant. The count run.
   */
  async trials(peer: RacePeer, min: number, trial: () => Promise<void>): Promise<number> {
    let n = 0;
    while (n < min || (peer.ownThread && (this.mine === 0 || this.theirs === 0) && n < 5 * min)) {
      await trial();
      n++;
    }
    this.check(peer, n);
    return n;
  }

  check(peer: RacePeer, n: number, unit = 'trials'): void {
    console.log(
      `[${this.ctx.name}] ${this.what}, ${n} ${unit}: this side won ${this.mine}, the peer ${this.theirs}${peer.ownThread ? ' (peer on its own thread)' : ' (peer in this thread)'}`,
    );
    if (!peer.ownThread) return;
    // a split of n/0 means the two sides never overlapped: nothing was raced
    expect(this.mine, `${this.what}: this side never won`).toBeGreaterThan(0);
    expect(this.theirs, `${this.what}: the peer never won`).toBeGreaterThan(0);
  }
}
