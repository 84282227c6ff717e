/**
 * The sweep lease is renewed on a timer, not between batches: a batch slower than the
 * lock TTL keeps the lock, and once a renewal fails no further batch is claimed. A sweep
 * stuck on a store call that never returns stops renewing and gives the lease up.
 * Real Redis lock, real SQLite store slowed down by a wrapper (escalations take time).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient } from 'redis';
import { beforeEach, describe, expect, it } from 'vitest';
import type { Lock } from '../../src/lock/port.js';
import { createMetrics, type Metrics } from '../../src/metrics.js';
import type { Store } from '../../src/store/port.js';
import type { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { type Sweeper } from '../../src/worker/sweeper.js';
import { REDIS_MISSING, redisAvailable } from '../helpers/redis-server.js';
import { armDue, sweeperOver as sweeperOf, sweepSuite } from '../helpers/sweep-suite.js';
import { hookedStore, type StoreHooks } from '../helpers/slow-store.js';
import { eventually } from '../helpers/vigil.js';

const TTL = 600;

function sweeperOver(store: Store, lock: Lock, metrics: Metrics, lockName: string, batchSize: number, stallMs?: number): Sweeper {
  return sweeperOf(store, lock, metrics, { lockName, lockTtlMs: TTL, batchSize, ...(stallMs === undefined ? {} : { stallMs }) });
}

const suite = redisAvailable() ? 'sweep lease renewal' : `sweep lease renewal (skipped: ${REDIS_MISSING})`;

describe.skipIf(!redisAvailable())(suite, () => {
  const fx = sweepSuite();
  const { connect, keyPrefix } = fx;
  let store: SqliteStore;
  beforeEach(() => {
    store = fx.store();
  });

  it('a batch that takes longer than the lock TTL keeps the lease: no other replica gets the lock meanwhile, one fence claims every timer', async () => {
    await armDue(store, 12);
    const lockName = `sweep-${randomUUID()}`;
    const slow: StoreHooks = { escalateBatch: () => sleep(1200) }; // a group of 6 escalations taking 1.2 s ≈ 2 × TTL per batch
    const metrics = createMetrics({ replica: 'a', collectDefault: false });
    const sweeper = sweeperOver(hookedStore(store, slow), await connect(), metrics, lockName, 6);

    const other = await connect();
    let done = false;
    let stolen = 0;
    const sweep = sweeper.sweep().finally(() => (done = true));
    // the sweeper sets vigil_lock_holder to 0 before it releases: a lease won while it is still 1 overlaps the sweep
    const holding = async () => (await metrics.lockHolder.get()).values[0]?.value === 1;
    const contender = (async () => {
      while (!done) {
        const lease = await other.acquire(lockName, TTL);
        if (lease) {
          if (await holding()) stolen++;
          await lease.release();
        }
        await sleep(50);
      }
    })();
    const report = await sweep;
    await contender;

    expect(report).toMatchObject({ outcome: 'swept', claimed: 12, escalated: 12, lostLease: false });
    expect(stolen).toBe(0);
    expect((await store.listIncidents()).every((i) => i.fence === report.fence)).toBe(true);
    const ok = (await metrics.lockExtensions.get()).values.find((v) => v.labels.result === 'ok')?.value ?? 0;
    expect(ok).toBeGreaterThanOrEqual(3);
  });

  it('when a renewal fails (the lock key is gone), the sweep finishes the batch it claimed and claims no further batch', async () => {
    await armDue(store, 12);
    const lockName = `sweep-${randomUUID()}`;
    const raw = createClient({ url: fx.server().url });
    raw.on('error', () => {});
    await raw.connect();
    let escalations = 0;
    const hooks: StoreHooks = {
      escalateBatch: async () => {
        // during the first group the lock key vanishes (flushed, or lapsed and taken): the next renewal fails
        if (++escalations === 1) for (const key of await raw.keys(`${keyPrefix}*`)) if (!key.endsWith(':fence')) await raw.del(key);
        await sleep(600);
      },
    };
    const metrics = createMetrics({ replica: 'a', collectDefault: false });
    try {
      const report = await sweeperOver(hookedStore(store, hooks), await connect(), metrics, lockName, 6).sweep();
      expect(report).toMatchObject({ claimed: 6, escalated: 6, lostLease: true });
      expect(await store.overdue()).toMatchObject({ count: 6 }); // the second batch was never claimed
      expect((await metrics.lockExtensions.get()).values.find((v) => v.labels.result === 'lost')?.value).toBe(1);
    } finally {
      await raw.close();
    }
  });

  it('when a renewal fails because Redis stopped, the sweep claims no further batch', async () => {
    await armDue(store, 12);
    let escalations = 0;
    const hooks: StoreHooks = {
      escalateBatch: async () => {
        if (++escalations === 1) await fx.server().stop();
        await sleep(600);
      },
    };
    const metrics = createMetrics({ replica: 'a', collectDefault: false });
    const report = await sweeperOver(hookedStore(store, hooks), await connect(), metrics, `sweep-${randomUUID()}`, 6).sweep();
    expect(report).toMatchObject({ claimed: 6, escalated: 6, lostLease: true });
    expect(await store.overdue()).toMatchObject({ count: 6 });
  });
  it('invariant 4 (no SOS lost): a sweep stuck on a store call that never returns gives its lease up; another replica escalates every timer', async () => {
    await armDue(store, 12);
    const lockName = `sweep-${randomUUID()}`;
    let stuck!: () => void;
    const reached = new Promise<void>((r) => (stuck = r));
    // replica A: its first group escalation never returns (a server that accepts and never answers)
    const hung: StoreHooks = {
      escalateBatch: () => {
        stuck();
        return new Promise<void>(() => undefined);
      },
    };
    const metricsA = createMetrics({ replica: 'a', collectDefault: false });
    const a = sweeperOver(hookedStore(store, hung), await connect(), metricsA, lockName, 6, 1500);
    void a.sweep();
    await reached;
    expect(await store.listIncidents()).toHaveLength(0); // A committed nothing

    // replica B: a healthy store; it gets the lock once A gives it up, repairs A's claimed batch and claims the rest
    const b = sweeperOver(store, await connect(), createMetrics({ replica: 'b', collectDefault: false }), lockName, 6);
    const reports: Awaited<ReturnType<Sweeper['sweep']>>[] = [];
    await eventually(
      async () => {
        reports.push(await b.sweep());
        return (await store.listIncidents()).length === 12;
      },
      'replica B escalating all 12 timers',
      30_000,
      100,
    );
    const won = reports.filter((r) => r.outcome === 'swept');
    expect(won.length).toBeGreaterThan(0);
    expect(reports.filter((r) => r.outcome === 'contended').length).toBeGreaterThan(0); // A held the lock first
    const incidents = await store.listIncidents();
    expect(new Set(incidents.map((i) => i.timerId)).size).toBe(12);
    expect(await store.overdue()).toMatchObject({ count: 0 });
    // A counted the stall as a sweep loop error and stopped renewing
    expect((await metricsA.loopErrors.get()).values.find((v) => v.labels.loop === 'sweep')?.value).toBe(1);
  });
});
