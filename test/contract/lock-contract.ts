/**
 * The contract every Lock adapter passes. `makeLock` returns a fresh fixture per
 * case: `lock`, a way to open `other` clients (another replica; the same instance
 * for an in-process lock, which only ever serves one process), and `cleanup`.
 * Leases lapsing is made to happen by moving the lock's clock when the adapter takes
 * one (`passTime`); a lock whose ttl is kept by a server (Redis) is waited for.
 */
import { setTimeout as wait } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Lease, Lock } from '../../src/lock/port.js';

export interface LockFixture {
  lock: Lock;
  /** Another client of the same lock service, like a second replica. */
  other: () => Promise<Lock>;
  /** move the lock's clock forward by `ms`, for adapters built on an injected clock */
  passTime?: (ms: number) => void;
  cleanup(): Promise<void>;
}

const NAME = 'sweep';
const LONG = 10_000;
const SHORT = 100;
/** Comfortably past SHORT, so the lease has certainly expired. */
const AFTER_SHORT = 200;
/** The ttl a lease is extended from; on a real server it must outlast a stall between acquire and extend. */
const BEFORE_EXTEND = 1_000;

export function lockContract(adapter: string, makeLock: () => Promise<LockFixture>): void {
  describe(`Lock contract: ${adapter}`, () => {
    let fx: LockFixture;
    beforeEach(async () => {
      fx = await makeLock();
    });
    afterEach(async () => {
      await fx.cleanup();
    });

    // a sleep only where the ttl is kept by a server: a slow machine only makes it longer, never too short
    const sleep = async (ms: number) => {
      if (fx.passTime) fx.passTime(ms);
      else await wait(ms);
    };

    const held = (lease: Lease | null): Lease => {
      expect(lease).not.toBeNull();
      if (lease === null) throw new Error('expected a lease');
      return lease;
    };

    it('while a lease is held, another client cannot acquire the same name', async () => {
      held(await fx.lock.acquire(NAME, LONG));
      const other = await fx.other();
      expect(await other.acquire(NAME, LONG)).toBeNull();
      expect(await fx.lock.acquire(NAME, LONG)).toBeNull();
    });

    it('different names are independent locks', async () => {
      held(await fx.lock.acquire(NAME, LONG));
      held(await (await fx.other()).acquire(`${NAME}-other`, LONG));
    });

    it('release lets another client acquire', async () => {
      const lease = held(await fx.lock.acquire(NAME, LONG));
      await lease.release();
      const other = await fx.other();
      held(await other.acquire(NAME, LONG));
    });

    it('a lease expires after its ttl, so another client can take it', async () => {
      held(await fx.lock.acquire(NAME, SHORT));
      await sleep(AFTER_SHORT);
      const other = await fx.other();
      held(await other.acquire(NAME, LONG));
    });

    it('releasing an expired lease does not remove the lock of the client that took over', async () => {
      const stale = held(await fx.lock.acquire(NAME, SHORT));
      await sleep(AFTER_SHORT);
      const other = await fx.other();
      const current = held(await other.acquire(NAME, LONG));
      await stale.release();
      expect(await fx.lock.acquire(NAME, LONG)).toBeNull();
      // the takeover's lease is still its own
      expect(await current.extend(LONG)).toBe(true);
    });

    it('extend prolongs a lease that is still held', async () => {
      const lease = held(await fx.lock.acquire(NAME, BEFORE_EXTEND));
      expect(await lease.extend(LONG)).toBe(true);
      await sleep(BEFORE_EXTEND + AFTER_SHORT);
      const other = await fx.other();
      expect(await other.acquire(NAME, LONG)).toBeNull();
    });

    it('extend answers false once the lease expired and another client took it, and leaves that lock alone', async () => {
      const stale = held(await fx.lock.acquire(NAME, SHORT));
      await sleep(AFTER_SHORT);
      const other = await fx.other();
      const current = held(await other.acquire(NAME, SHORT));
      expect(await stale.extend(LONG)).toBe(false);
      // The takeover's own short ttl still applies: the stale extend did not prolong it.
      await sleep(AFTER_SHORT);
      held(await fx.lock.acquire(NAME, LONG));
      expect(current.token).not.toBe(stale.token);
    });

    it('fences strictly increase across holders, by release and by expiry', async () => {
      const other = await fx.other();
      const a = held(await fx.lock.acquire(NAME, LONG));
      await a.release();
      const b = held(await other.acquire(NAME, SHORT));
      await sleep(AFTER_SHORT);
      const c = held(await fx.lock.acquire(NAME, LONG));
      expect(a.fence).toBeGreaterThan(0);
      expect(b.fence).toBeGreaterThan(a.fence);
      expect(c.fence).toBeGreaterThan(b.fence);
    });

    it('release twice is safe and never releases a later holder', async () => {
      const first = held(await fx.lock.acquire(NAME, LONG));
      await first.release();
      await first.release();
      const other = await fx.other();
      held(await other.acquire(NAME, LONG));
      await first.release();
      expect(await fx.lock.acquire(NAME, LONG)).toBeNull();
    });

    it('of 20 parallel acquires from 5 clients exactly one gets a lease', async () => {
      const clients = [fx.lock, ...(await Promise.all([1, 2, 3, 4].map(() => fx.other())))];
      const attempts = Array.from({ length: 20 }, (_, i) => clients[i % clients.length]!.acquire(NAME, LONG));
      const leases = (await Promise.all(attempts)).filter((l): l is Lease => l !== null);
      expect(leases).toHaveLength(1);
    });
  });
}
