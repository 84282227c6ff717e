/**
 * Sweep shards (src/domain/sweep-shard.ts): with SWEEP_SHARDS > 1 each shard has its own
 * lock, so several replicas escalate at once, each its own timers, and a shard whose
 * holder is gone is swept by another replica once that lease lapses. Real Redis lock, real
 * SQLite file; the escalations are slowed by a hook so that sweeps overlap in time.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { beforeEach, describe, expect, it } from 'vitest';
import { shardLockName, sweepSlot } from '../../src/domain/sweep-shard.js';
import type { Lock } from '../../src/lock/port.js';
import { createMetrics } from '../../src/metrics.js';
import type { Store } from '../../src/store/port.js';
import type { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { type Sweeper, type SweepReport } from '../../src/worker/sweeper.js';
import { REDIS_MISSING, redisAvailable } from '../helpers/redis-server.js';
import { armDue, sweeperOver as sweeperOf, sweepSuite } from '../helpers/sweep-suite.js';
import { hookedStore, type StoreHooks } from '../helpers/slow-store.js';
import { eventually } from '../helpers/vigil.js';

const TTL = 1500;

function sweeperOver(store: Store, lock: Lock, replica: string, lockName: string, shards: number): Sweeper {
  const metrics = createMetrics({ replica, collectDefault: false });
  return sweeperOf(store, lock, metrics, { lockName, lockTtlMs: TTL, batchSize: 10, groupSize: 5, shards });
}

const suite = redisAvailable() ? 'sweep shards' : `sweep shards (skipped: ${REDIS_MISSING})`;

describe.skipIf(!redisAvailable())(suite, () => {
  const fx = sweepSuite();
  const { connect } = fx;
  let store: SqliteStore;
  beforeEach(() => {
    store = fx.store();
  });

  it('replicas add capacity, invariant 1 kept: three replicas on three shards escalate at the same time, each timer exactly once', async () => {
    const ids = await armDue(store, 60);
    const lockName = `sweep-${randomUUID()}`;
    // every group escalation takes 150 ms: a replica that held the only lock would keep the others out for its whole sweep
    let inFlight = 0;
    let mostAtOnce = 0;
    const slow: StoreHooks = {
      escalateBatch: async () => {
        mostAtOnce = Math.max(mostAtOnce, ++inFlight);
        await sleep(150);
        inFlight--;
      },
    };
    const replicas = await Promise.all(
      ['a', 'b', 'c'].map(async (r) => sweeperOver(hookedStore(store, slow), await connect(), r, lockName, 3)),
    );
    const escalatedBy = new Map<number, number>();
    await eventually(
      async () => {
        const reports = await Promise.all(replicas.map((s) => s.sweep()));
        reports.forEach((r, i) => escalatedBy.set(i, (escalatedBy.get(i) ?? 0) + r.escalated));
        return (await store.overdue()).count === 0 && (await store.countPendingEscalations()) === 0;
      },
      'every timer escalated',
      60_000,
      20,
    );
    const incidents = await store.listIncidents();
    expect(incidents).toHaveLength(60);
    expect(new Set(incidents.map((i) => i.timerId))).toEqual(new Set(ids));
    // the sweeps overlapped: more than one replica was escalating at one moment, and more than one did some of the work
    expect(mostAtOnce).toBeGreaterThanOrEqual(2);
    expect([...escalatedBy.values()].filter((n) => n > 0).length).toBeGreaterThanOrEqual(2);
    expect([...escalatedBy.values()].reduce((a, b) => a + b, 0)).toBe(60);
  }, 90_000);

  it('invariant 4 (no SOS lost): a shard whose holder died is swept by another replica once the lease lapses; the other shards at once', async () => {
    const ids = await armDue(store, 40);
    const lockName = `sweep-${randomUUID()}`;
    const of = 2;
    // a replica took shard 1's lock and died: no release, no renewal
    const dead = await (await connect()).acquire(shardLockName(lockName, { index: 1, of }), TTL);
    expect(dead).not.toBeNull();
    const sweeper = sweeperOver(store, await connect(), 'b', lockName, of);
    const first: SweepReport = await sweeper.sweep();
    const shard0 = ids.filter((id) => sweepSlot(id) % of === 0);
    const shard1 = ids.filter((id) => sweepSlot(id) % of === 1);
    expect(shard0.length).toBeGreaterThan(0);
    expect(shard1.length).toBeGreaterThan(0);
    // shard 0 at once, shard 1 not while its lease holds
    expect(first).toMatchObject({ outcome: 'swept', escalated: shard0.length });
    expect(new Set((await store.listIncidents()).map((i) => i.timerId))).toEqual(new Set(shard0));
    expect((await store.overdue()).count).toBe(shard1.length);
    // after the dead holder's lease lapses, the next sweeps take shard 1 too
    await eventually(
      async () => (await sweeper.sweep(), (await store.overdue()).count === 0),
      'shard 1 swept after the lease lapsed',
      30_000,
      100,
    );
    const incidents = await store.listIncidents();
    expect(incidents).toHaveLength(40);
    expect(new Set(incidents.map((i) => i.timerId))).toEqual(new Set(ids));
  }, 60_000);

  it('a sweep whose every shard is held elsewhere reports contended; one shard is the unsharded lock name', async () => {
    await armDue(store, 4);
    const lockName = `sweep-${randomUUID()}`;
    const holder = await connect();
    const leases = await Promise.all([0, 1, 2].map((index) => holder.acquire(shardLockName(lockName, { index, of: 3 }), TTL)));
    expect(shardLockName(lockName, { index: 0, of: 3 })).toBe(lockName);
    const report = await sweeperOver(store, await connect(), 'b', lockName, 3).sweep();
    expect(report).toMatchObject({ outcome: 'contended', claimed: 0, escalated: 0 });
    expect((await store.overdue()).count).toBe(4);
    await Promise.all(leases.map((l) => l?.release()));
  });
});
