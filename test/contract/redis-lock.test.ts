import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient } from 'redis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DomainError } from '../../src/domain/errors.js';
import type { Lease } from '../../src/lock/port.js';
import { RedisLock, type RedisLockOptions } from '../../src/lock/redis-lock.js';
import { freePort } from '../helpers/net.js';
import { REDIS_MISSING, redisAvailable, startRedis, type RedisServer } from '../helpers/redis-server.js';
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
    expect(await redisValue(`${keyPrefix}sweep`)).toBe(lease?.token);
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
    expect(await redisValue(`${keyPrefix}sweep`)).toBe(lease.token);
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
      // Redis persisted nothing, so the old lock and its fence are gone. Fences do not
      // survive a restart (they restart at 1); that is accepted because the fence is for
      // diagnosis — correctness comes from the store's compare-and-swap.
      expect(after.fence).toBe(1);
      expect(await raw.scriptExists(sha)).toEqual([1]);
      // The old lease's token-checked release cannot touch the new holder.
      await before?.release();
      expect(await raw.get(`${keyPrefix}sweep`)).toBe(after.token);
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
