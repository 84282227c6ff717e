/**
 * The sweep lease kept from one sweep to the next (`keepLeaseMs`, SWEEP_KEEP_LEASE_MS): no
 * take and release at every deadline, yet never held by a replica that is not sweeping. It
 * goes back when the next deadline is far, when no sweep starts in time and at shutdown; a
 * kept lease that was lost is never swept under, nor is one whose renewals a pause held back.
 * Real Redis lock, real SQLite store.
 */
import { randomUUID } from 'node:crypto';
import { createClient } from 'redis';
import { beforeEach, describe, expect, it } from 'vitest';
import type { Lock } from '../../src/lock/port.js';
import { createLogger } from '../../src/log.js';
import { createMetrics, type Metrics } from '../../src/metrics.js';
import type { Store } from '../../src/store/port.js';
import type { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { Scheduler } from '../../src/worker/scheduler.js';
import { type Sweeper } from '../../src/worker/sweeper.js';
import { REDIS_MISSING, redisAvailable } from '../helpers/redis-server.js';
import { armDue, sweeperOver as sweeperOf, sweepSuite } from '../helpers/sweep-suite.js';
import { eventually } from '../helpers/vigil.js';
import { testWorkers } from '../helpers/workers.js';

const log = createLogger({ level: 'silent' });

function sweeperOver(store: Store, lock: Lock, metrics: Metrics, lockName: string, ttlMs: number, keepLeaseMs: number): Sweeper {
  return sweeperOf(store, lock, metrics, { lockName, lockTtlMs: ttlMs, batchSize: 50, keepLeaseMs });
}

/** A live timer due `inMs` from the store's now (no contacts: its SOS has nothing to text). */
async function armIn(store: Store, id: string, inMs: number): Promise<void> {
  const now = await store.now();
  const r = await store.armTimer({ id, userId: id, startedAt: now, expiresAt: new Date(now.getTime() + inMs) });
  if (r.kind !== 'created') throw new Error(r.kind);
}

const counter = async (metrics: Metrics, name: 'lockAcquisitions' | 'lockExtensions', result: string): Promise<number> =>
  (await metrics[name].get()).values.find((v) => v.labels.result === result)?.value ?? 0;

/** Freeze this process (timers, sockets, everything) for `ms`: a holder paused by the OS or a long GC. */
const freeze = (ms: number): void => {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
};

const suite = redisAvailable() ? 'sweep lease kept between sweeps' : `sweep lease kept between sweeps (skipped: ${REDIS_MISSING})`;

describe.skipIf(!redisAvailable())(suite, () => {
  const fx = sweepSuite();
  const { connect, keyPrefix } = fx;
  let store: SqliteStore;
  beforeEach(() => {
    store = fx.store();
  });

  it('two sweeps in a row run under one lease (one acquisition, one fence); between them another replica finds the lock held', async () => {
    const lockName = `sweep-${randomUUID()}`;
    const metrics = createMetrics({ replica: 'a', collectDefault: false });
    const a = sweeperOver(store, await connect(), metrics, lockName, 3000, 5000);
    const other = await connect();
    await armDue(store, 3);
    const first = await a.sweep();
    expect(first).toMatchObject({ outcome: 'swept', claimed: 3, escalated: 3 });
    expect(a.keptLeases()).toEqual([lockName]);
    expect((await metrics.lockHolder.get()).values[0]?.value).toBe(1);
    expect(await other.acquire(lockName, 3000)).toBeNull();

    await armDue(store, 2);
    const second = await a.sweep();
    expect(second).toMatchObject({ outcome: 'swept', claimed: 2, escalated: 2, fence: first.fence });
    expect(await counter(metrics, 'lockAcquisitions', 'won')).toBe(1);
    await a.releaseKept();
    expect(a.keptLeases()).toEqual([]);
    expect((await metrics.lockHolder.get()).values[0]?.value).toBe(0);
    const lease = await other.acquire(lockName, 3000);
    expect(lease).not.toBeNull();
    expect(lease!.fence).toBeGreaterThan(first.fence);
  });

  it('with sweep shards no lease is kept: a replica that swept every shard leaves each free for the others (escalation stays spread)', async () => {
    const lockName = `sweep-${randomUUID()}`;
    const metrics = createMetrics({ replica: 'a', collectDefault: false });
    const a = sweeperOf(store, await connect(), metrics, { lockName, lockTtlMs: 3000, batchSize: 50, shards: 3, keepLeaseMs: 5000 });
    await armDue(store, 9);
    const report = await a.sweep();
    expect(report).toMatchObject({ outcome: 'swept', claimed: 9 });
    expect(a.keptLeases()).toEqual([]);
    const other = await connect();
    for (const name of [lockName, `${lockName}:1`, `${lockName}:2`]) {
      const lease = await other.acquire(name, 3000);
      expect(lease, name).not.toBeNull();
      await lease!.release();
    }
  });

  it('a kept lease goes back when no sweep starts within twice keepLeaseMs: the lock is free for another replica', async () => {
    const lockName = `sweep-${randomUUID()}`;
    const a = sweeperOver(store, await connect(), createMetrics({ replica: 'a', collectDefault: false }), lockName, 600, 150);
    const b = sweeperOver(store, await connect(), createMetrics({ replica: 'b', collectDefault: false }), lockName, 600, 0);
    expect(await a.sweep()).toMatchObject({ outcome: 'swept' });
    expect(a.keptLeases()).toEqual([lockName]);
    // the lease is renewed every 200 ms: only the idle limit gives it back
    const report = await eventually(
      async () => {
        const r = await b.sweep();
        return r.outcome === 'swept' ? r : undefined;
      },
      'replica B taking the lock A kept and no longer uses',
      20_000,
      50,
    );
    expect(a.keptLeases()).toEqual([]);
    expect(report.fence).toBeGreaterThan(0);
  });

  it('invariant 3 (one sweeper at a time): a kept lease lost between sweeps (lapsed and taken over) is never swept under; the old holder finds the lock held', async () => {
    const lockName = `sweep-${randomUUID()}`;
    const metrics = createMetrics({ replica: 'a', collectDefault: false });
    const a = sweeperOver(store, await connect(), metrics, lockName, 600, 60_000); // not given back for being idle
    const first = await a.sweep();
    expect(a.keptLeases()).toEqual([lockName]);

    // the key vanishes (lapsed, a Redis failover) and another replica takes the lock
    const raw = createClient({ url: fx.server().url });
    raw.on('error', () => {});
    await raw.connect();
    try {
      for (const key of await raw.keys(`${keyPrefix}*`)) if (!key.endsWith(':fence')) await raw.del(key);
    } finally {
      await raw.close();
    }
    const taker = await (await connect()).acquire(lockName, 60_000);
    expect(taker).not.toBeNull();
    expect(taker!.fence).toBeGreaterThan(first.fence);
    // A's next renewal (every 200 ms) fails and it lets the kept lease go
    await eventually(async () => a.keptLeases().length === 0 || undefined, 'A noticing it lost the kept lease', 20_000, 20);
    expect(await counter(metrics, 'lockExtensions', 'lost')).toBe(1);
    expect((await metrics.lockHolder.get()).values[0]?.value).toBe(0);

    await armDue(store, 3);
    const next = await a.sweep();
    expect(next).toMatchObject({ outcome: 'contended', claimed: 0 });
    expect(await store.overdue()).toMatchObject({ count: 3 }); // nothing claimed under the stale fence
    await taker!.release();
  });

  it('invariant 3 (one sweeper at a time): a holder paused past its TTL renews its kept lease before sweeping under it; it lapsed, so the sweep takes the lock anew under a higher fence', async () => {
    const TTL = 300;
    const lockName = `sweep-${randomUUID()}`;
    const metrics = createMetrics({ replica: 'a', collectDefault: false });
    const a = sweeperOver(store, await connect(), metrics, lockName, TTL, 10_000);
    const first = await a.sweep();
    expect(a.keptLeases()).toEqual([lockName]);
    await armDue(store, 3);

    freeze(3 * TTL); // no renewal runs: Redis lets the key lapse meanwhile
    const sweep = a.sweep(); // started before any timer of this process could run
    const report = await sweep;
    expect(report).toMatchObject({ outcome: 'swept', claimed: 3, escalated: 3 });
    expect(report.fence).toBeGreaterThan(first.fence);
    expect((await store.listIncidents()).every((i) => i.fence === report.fence)).toBe(true);
    expect(await counter(metrics, 'lockAcquisitions', 'won')).toBe(2);
    await a.releaseKept();
  });

  describe('with the scheduler', () => {
    /** Replica A with a scheduler (keepLeaseMs 5 s), another replica's lock client, and a timer due in 3 s; `start` starts A and waits until it keeps the lease for that timer. */
    async function keeping(ttlMs: number) {
      const lockName = `sweep-${randomUUID()}`;
      const metrics = createMetrics({ replica: 'a', collectDefault: false });
      const keepLeaseMs = 5000;
      const { sweeper: a, dispatcher } = testWorkers(store, {
        lock: await connect(),
        metrics,
        log,
        sweep: { lockName, lockTtlMs: ttlMs, batchSize: 50, keepLeaseMs },
      });
      const scheduler = new Scheduler(a, dispatcher, metrics, log, '* * * * * *', { store, maxAheadMs: ttlMs, keepLeaseMs });
      const other = await connect();
      await armIn(store, 'near', 3000);
      const start = async () => {
        scheduler.start();
        // the first sweep finds `near` 3 s away (≤ 5 s): the lease is kept for it
        await eventually(async () => a.keptLeases().length === 1 || undefined, 'the lease kept after the first sweep', 20_000, 10);
      };
      return { lockName, metrics, a, scheduler, other, start };
    }

    it('the lease is kept while the next deadline is near and given back once it is far, though the cron tick sweeps every second', async () => {
      const { lockName, scheduler, other, start } = await keeping(3000);
      await armIn(store, 'far', 120_000);
      try {
        await start();
        expect(await other.acquire(lockName, 3000)).toBeNull();
        await eventually(() => store.incidentForTimer('near'), 'the incident of the near timer', 30_000);
        // then the next deadline is 2 minutes away: the lock is free, whatever the ticks do
        const lease = await eventually(() => other.acquire(lockName, 60_000), 'another replica taking the lock', 20_000, 50);
        expect(lease.fence).toBeGreaterThan(0);
        expect(await store.incidentForTimer('far')).toBeNull();
        await lease.release();
      } finally {
        await scheduler.stop();
      }
    });

    it('shutdown gives the kept lease back at once: another replica takes the lock without waiting for its TTL', async () => {
      const { lockName, metrics, a, scheduler, other, start } = await keeping(30_000);
      try {
        await start();
      } finally {
        await scheduler.stop();
      }
      expect(a.keptLeases()).toEqual([]);
      expect((await metrics.lockHolder.get()).values[0]?.value).toBe(0);
      const lease = await other.acquire(lockName, 30_000); // the TTL is 30 s: only a release frees it now
      expect(lease).not.toBeNull();
      await lease!.release();
    });
  });
});
