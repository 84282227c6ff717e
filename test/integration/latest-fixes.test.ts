/**
 * The latest-fix cache, both adapters (this process's memory; a real throwaway Redis):
 * `getMany` answers each timer's own fix in one call, leaves out timers without one or whose
 * fix outlived its time to live, and rejects when Redis cannot be reached (the SOS then uses
 * the store's fix: test/integration/location-escalation.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredFix } from '../../src/domain/location.js';
import { MemoryFixes } from '../../src/location/memory-fixes.js';
import type { LatestFixes } from '../../src/location/port.js';
import { RedisFixes } from '../../src/location/redis-fixes.js';
import { redisAvailable, REDIS_MISSING, startRedis, type RedisServer } from '../helpers/redis-server.js';

const fix = (timerId: string, lat: number, at = Date.now()): StoredFix => ({
  timerId,
  userId: `u-${timerId}`,
  lat,
  lng: -122.4,
  at: new Date(at),
});

function contract(name: string, open: (ttlMs: number) => Promise<LatestFixes>) {
  it(`${name}: getMany answers each timer's own latest fix and leaves out timers without one`, async () => {
    const cache = await open(60_000);
    try {
      await cache.set(fix('t1', 37.1));
      await cache.set(fix('t2', 37.2));
      await cache.set(fix('t2', 37.25)); // the later one replaces it
      const got = await cache.getMany(['t0', 't2', 't1', 't3']);
      expect([...got.keys()].sort()).toEqual(['t1', 't2']);
      expect(got.get('t1')?.lat).toBe(37.1);
      expect(got.get('t2')?.lat).toBe(37.25);
      expect(got.get('t2')?.userId).toBe('u-t2');
      expect((await cache.getMany([])).size).toBe(0);
    } finally {
      await cache.close();
    }
  });

  it(`${name}: a fix past its time to live is not answered`, async () => {
    const cache = await open(50);
    try {
      await cache.set(fix('old', 1));
      const deadline = Date.now() + 10_000;
      while ((await cache.getMany(['old'])).size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect((await cache.getMany(['old'])).size).toBe(0);
    } finally {
      await cache.close();
    }
  });
}

describe('latest-fix cache: memory', () => {
  contract('memory', async (ttlMs) => new MemoryFixes(ttlMs));
});

describe.skipIf(!redisAvailable())(`latest-fix cache: Redis${redisAvailable() ? '' : ` — ${REDIS_MISSING}`}`, () => {
  let redis: RedisServer;
  let n = 0;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });
  // a key prefix per cache, so the cases do not see each other's fixes
  contract('redis', (ttlMs) => RedisFixes.connect({ url: redis.url, ttlMs, keyPrefix: `t${++n}:` }));

  it('redis: getMany rejects when Redis is gone', async () => {
    const own = await startRedis();
    const cache = await RedisFixes.connect({ url: own.url, ttlMs: 60_000, commandTimeoutMs: 500 });
    try {
      await own.stop();
      await expect(cache.getMany(['t1', 't2'])).rejects.toThrow();
    } finally {
      await cache.close();
    }
  });
});
