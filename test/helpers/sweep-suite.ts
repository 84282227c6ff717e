/**
 * What the sweep integration suites share (sweep-lease, sweep-shards): one throwaway
 * redis-server for the suite, a fresh SQLite file and RedisLock connections per test, and
 * due timers armed straight through the store. Call `sweepSuite()` inside the describe.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import type { Lock } from '../../src/lock/port.js';
import { RedisLock } from '../../src/lock/redis-lock.js';
import type { Metrics } from '../../src/metrics.js';
import type { Store } from '../../src/store/port.js';
import type { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Sweeper, SweepSettings } from '../../src/worker/sweeper.js';
import { startRedis, type RedisServer } from './redis-server.js';
import { tempSqliteStore, type TempSqliteStore } from './sqlite-store.js';
import { testWorkers } from './workers.js';

export interface SweepSuite {
  server(): RedisServer;
  store(): SqliteStore;
  /** a new lock client on the suite's Redis (closed after the test) */
  connect(): Promise<RedisLock>;
  /** every lock key of this suite starts with it */
  keyPrefix: string;
}

export function sweepSuite(): SweepSuite {
  let server: RedisServer | undefined;
  let tmp: TempSqliteStore | undefined;
  const locks: RedisLock[] = [];
  const keyPrefix = `test:${randomUUID()}:`;
  const need = <T>(v: T | undefined, what: string): T => {
    if (v === undefined) throw new Error(`${what} is not started (use it inside a test)`);
    return v;
  };

  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(async () => {
    await server?.stop();
  });
  beforeEach(async () => {
    tmp = await tempSqliteStore();
  });
  afterEach(async () => {
    await Promise.all(locks.splice(0).map((l) => l.close()));
    // a test that stopped Redis leaves it running again for the next one
    if (server && server.pid() === undefined) await server.start();
    await tmp?.cleanup();
  });

  return {
    server: () => need(server, 'redis-server'),
    store: () => need(tmp?.store, 'the SQLite store'),
    connect: async () => {
      const lock = await RedisLock.connect({ url: need(server, 'redis-server').url, keyPrefix });
      locks.push(lock);
      return lock;
    },
    keyPrefix,
  };
}

/** `n` live timers, one per person, due between 1 s and 1 s − n ms ago; answers their ids. */
export async function armDue(store: Store, n: number): Promise<string[]> {
  const now = await store.now();
  const ids: string[] = [];
  // a person of their own for each timer (one open SOS per person: a second one would join the first)
  const batch = randomUUID().slice(0, 8);
  for (let i = 0; i < n; i++) {
    const id = `t-${i}-${randomUUID()}`;
    const r = await store.armTimer({
      id,
      userId: `u-${i}-${batch}`,
      startedAt: new Date(now.getTime() - 60_000),
      expiresAt: new Date(now.getTime() - 1000 + i),
    });
    if (r.kind !== 'created') throw new Error(r.kind);
    ids.push(id);
  }
  return ids;
}

/** A sweeper over `store` and `lock` with a real escalator (no events, the default SMS caps), one group at a time, silent. */
export function sweeperOver(
  store: Store,
  lock: Lock,
  metrics: Metrics,
  settings: Pick<SweepSettings, 'lockName' | 'lockTtlMs' | 'batchSize'> & Partial<SweepSettings>,
): Sweeper {
  return testWorkers(store, { lock, metrics, sweep: settings }).sweeper;
}
