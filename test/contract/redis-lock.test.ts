import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient } from 'redis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DomainError } from '../../src/domain/errors.js';
import type { Lease } from '../../src/lock/port.js';
import { RedisLock, type RedisLockOptions } from '../../src/lock/redis-lock.js';
import type { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { freePort } from '../helpers/net.js';
import { REDIS_MISSING, redisAvailable, startRedis, type RedisServer } from '../helpers/redis-server.js';
import { tempSqliteStore, type TempSqliteStore } from '../helpers/sqlite-store.js';
import { lockContract } from './lock-contract.js';

const suite = redisAvailable() ? 'RedisLock' : `RedisLock (skipped: ${REDIS_MISSING})`;

describe.skipIf(!redisAvailable())(suite, () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(async () => {
    await server?.stop();
  });

  // Every case gets its own key prefix; each client is a separate connection, like a replica.
  lockContract('RedisLock', async () => {
    const keyPrefix = `test:${randomUUID()}:`;
    const opened: RedisLock[] = [];
    const open = async () => {
      const lock = await RedisLock.connect({ url: server.url, keyPrefix, replicaId: `replica-${opened.length}` });
      opened.push(lock);
      return lock;
    };
    const lock = await open();
    return { lock, other: open, cleanup: async () => void (await Promise.all(opened.map((l) => l.close()))) };
  });
});

describe.skipIf(!redisAvailable())(`${suite}: Redis faults`, () => {
  // Its own server: these cases stop and restart it.
  let server: RedisServer;
  const opened: RedisLock[] = [];
  const open = async (options: Partial<RedisLockOptions> = {}) => {
    const lock = await RedisLock.connect({ url: server.url, keyPrefix: `test:${randomUUID()}:`, ...options });
    opened.push(lock);
    return lock;
  };

  beforeAll(async () => {
    server = await startRedis();
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((l) => l.close()));
    if (server.pid() === undefined) await server.start();
  });
  afterAll(async () => {
    await server?.stop();
  });

  /** What Redis holds under `key` right now, read over a separate connection. */
  const redisValue = async (key: string): Promise<string | null> => {
    const raw = createClient({ url: server.url });
    raw.on('error', () => {});
    await raw.connect();
    try {
      return await raw.get(key);
    } finally {
      await raw.close();
    }
  };

  it('the lock key holds the token, which names the replica that holds the lock', async () => {
    const keyPrefix = `test:${randomUUID()}:`;
    const lock = await open({ replicaId: 'replica-b', keyPrefix });
    const lease = await lock.acquire('sweep', 10_000);
    expect(lease?.token.startsWith('replica-b:')).toBe(true);
    expect(await redisValue(`${keyPrefix}{sweep}`)).toBe(lease?.token);
  });

  it('close is safe to call twice', async () => {
    const lock = await open();
    await lock.close();
    await lock.close();
  });

  it('connect rejects as unavailable when nothing listens', async () => {
    const port = await freePort();
    const err = await RedisLock.connect({ url: `redis://127.0.0.1:${port}`, connectTimeoutMs: 300 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DomainError);
    expect(err).toMatchObject({ kind: 'unavailable', code: 'lock_unavailable' });
  });

  // The 5 s test timeout is the "fast" requirement: with the offline queue disabled the
  // command is refused at once instead of waiting for Redis to come back.
  it('acquire throws, and does not hang, while Redis is down', { timeout: 5_000 }, async () => {
    const lock = await open();
    await server.stop();
    await expect(lock.acquire('sweep', 10_000)).rejects.toMatchObject({ kind: 'unavailable' });
    // Still refused (not queued) a while later, while the client keeps reconnecting.
    await sleep(300);
    await expect(lock.acquire('sweep', 10_000)).rejects.toMatchObject({ kind: 'unavailable' });
  });

  // A frozen Redis accepts bytes and never answers: node-redis's own command timeout
  // does not cover that (it stops counting once a command is written).
  it('acquire throws, and does not hang, while Redis is frozen; the client recovers when it thaws', { timeout: 15_000 }, async () => {
    const keyPrefix = `test:${randomUUID()}:`;
    const lock = await open({ commandTimeoutMs: 300, maxReconnectDelayMs: 100, keyPrefix });
    const pid = server.pid();
    if (pid === undefined) throw new Error('test redis-server is not running');
    process.kill(pid, 'SIGSTOP');
    try {
      await expect(lock.acquire('sweep', 500)).rejects.toMatchObject({ kind: 'unavailable' });
      await expect(lock.acquire('sweep', 500)).rejects.toMatchObject({ kind: 'unavailable' });
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    // Redis still runs the script it had buffered when it thaws, so a timed-out acquire
    // may have taken the lock after all; nobody holds that lease and it lapses after its ttl.
    const lease = await eventually(() => lock.acquire('sweep', 10_000));
    expect(await redisValue(`${keyPrefix}{sweep}`)).toBe(lease.token);
  });

  it('after Redis restarts on the same port, the same client acquires again (scripts reloaded)', async () => {
    const keyPrefix = `test:${randomUUID()}:`;
    const lock = await open({ maxReconnectDelayMs: 200, keyPrefix });
    const before = await lock.acquire('sweep', 10_000);
    expect(before).not.toBeNull();

    await server.stop();
    await server.start();
    // The restarted Redis has an empty script cache: the next EVALSHA gets NOSCRIPT.
    const sha = createHash('sha1')
      .update(readFileSync(new URL('../../src/lock/redis/acquire.lua', import.meta.url), 'utf8'))
      .digest('hex');
    const raw = createClient({ url: server.url });
    raw.on('error', () => {});
    await raw.connect();
    try {
      expect(await raw.scriptExists(sha)).toEqual([0]);

      const after = await eventually(() => lock.acquire('sweep', 10_000));
      // Redis persisted nothing, so the old lock and its fence counter are gone; without a
      // fenceFloor (the store's record) the counter restarts at 1.
      expect(after.fence).toBe(1);
      expect(await raw.scriptExists(sha)).toEqual([1]);
      // The old lease's token-checked release cannot touch the new holder.
      await before?.release();
      expect(await raw.get(`${keyPrefix}{sweep}`)).toBe(after.token);
    } finally {
      await raw.close();
    }
  });
});

describe.skipIf(!redisAvailable())(`${suite}: fences across Redis restarts, hash tags`, () => {
  // Its own server: a case restarts it.
  let server: RedisServer;
  let tmp: TempSqliteStore;
  let store: SqliteStore;
  const opened: RedisLock[] = [];
  const open = async (options: Partial<RedisLockOptions> = {}) => {
    const lock = await RedisLock.connect({
      url: server.url,
      fenceFloor: () => store.maxRecordedFence(),
      maxReconnectDelayMs: 200,
      ...options,
    });
    opened.push(lock);
    return lock;
  };

  beforeAll(async () => {
    server = await startRedis();
  });
  beforeEach(async () => {
    tmp = await tempSqliteStore();
    store = tmp.store;
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((l) => l.close()));
    if (server.pid() === undefined) await server.start();
    await tmp.cleanup();
  });
  afterAll(async () => {
    await server?.stop();
  });

  /** Sweep one due timer under `fence`, as the sweeper does: the fence is recorded in the store. */
  const recordSweep = async (fence: number) => {
    const now = await store.now();
    const r = await store.armTimer({
      id: randomUUID(),
      userId: randomUUID(),
      startedAt: new Date(now.getTime() - 60_000),
      expiresAt: new Date(now.getTime() - 1),
    });
    if (r.kind !== 'created') throw new Error(r.kind);
    const [t] = await store.claimDueTimers(1, fence);
    await store.openIncident(t!, fence, randomUUID());
  };

  it('after Redis restarts (counter lost), the next fence is greater than every fence used before', async () => {
    const keyPrefix = `test:${randomUUID()}:`;
    const a = await open({ keyPrefix });
    const b = await open({ keyPrefix });
    const used: number[] = [];
    for (const lock of [a, b, a, b, a]) {
      const lease = await lock.acquire('sweep', 10_000);
      if (!lease) throw new Error('expected the lock');
      used.push(lease.fence);
      await recordSweep(lease.fence);
      await lease.release();
    }
    expect(used).toEqual([...used].sort((x, y) => x - y));
    expect(new Set(used).size).toBe(used.length);

    await server.stop();
    await server.start(); // empty: the fence counter is gone

    const after = await eventually(() => b.acquire('sweep', 10_000));
    expect(after.fence).toBeGreaterThan(Math.max(...used));
    await after.release();
    const next = await eventually(() => a.acquire('sweep', 10_000));
    expect(next.fence).toBe(after.fence + 1);
  });

  it('when the store cannot say its highest fence, acquire throws unavailable and leaves the lock free; the next acquire seeds', async () => {
    const keyPrefix = `test:${randomUUID()}:`;
    await recordSweep(41);
    let storeDown = true;
    const lock = await open({
      keyPrefix,
      fenceFloor: async () => {
        if (storeDown) throw new Error('store down');
        return store.maxRecordedFence();
      },
    });
    await expect(lock.acquire('sweep', 10_000)).rejects.toMatchObject({ kind: 'unavailable' });
    storeDown = false;
    const lease = await lock.acquire('sweep', 10_000); // free at once: not held until the ttl
    expect(lease?.fence).toBe(42);
  });

  it('the lock key and its fence key share a hash tag (one Redis Cluster slot), keeping the lock name', async () => {
    const keyPrefix = `test:${randomUUID()}:`;
    const lock = await open({ keyPrefix });
    const lease = await lock.acquire('vigil:sweep', 10_000);
    const raw = createClient({ url: server.url });
    raw.on('error', () => {});
    await raw.connect();
    try {
      expect((await raw.keys(`${keyPrefix}*`)).sort()).toEqual([`${keyPrefix}{vigil:sweep}`, `${keyPrefix}{vigil:sweep}:fence`]);
      expect(await raw.get(`${keyPrefix}{vigil:sweep}`)).toBe(lease?.token);
    } finally {
      await raw.close();
    }
  });
});

/** Retry `attempt` until it gives a lease (the client reconnects in the background, old leases lapse). */
async function eventually(attempt: () => Promise<Lease | null>, withinMs = 10_000): Promise<Lease> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    let failure: unknown = new Error('lock still held');
    try {
      const lease = await attempt();
      if (lease) return lease;
    } catch (err) {
      failure = err;
    }
    if (Date.now() > deadline) throw failure;
    await sleep(50);
  }
}
