/**
 * The sweep lease on its own (src/worker/sweep-lease.ts): renewals every TTL/3, a lost or
 * stalled lease, a lease kept between sweeps, release. A plain in-memory lock whose answers
 * the test chooses, and vitest's fake timers (performance.now included), so each case moves
 * time exactly as far as it needs and waits for nothing.
 */
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Lease, Lock } from '../../src/lock/port.js';
import { createLogger } from '../../src/log.js';
import { createMetrics, type Metrics } from '../../src/metrics.js';
import { KEPT_LEASE_LOST, SweepLeases, type LeaseReport, type LeaseSettings, type SweepLease } from '../../src/worker/sweep-lease.js';

/** One holder per name; `extend` answers what `onExtend` says (a lost lease, a Redis that never answers). */
class MemoryLock implements Lock {
  readonly holders = new Map<string, string>();
  readonly calls = { acquire: 0, extend: 0, release: 0 };
  onExtend: () => Promise<boolean> = async () => true;
  down = false;
  private fence = 0;

  async acquire(name: string): Promise<Lease | null> {
    this.calls.acquire++;
    if (this.down) throw new Error('lock service down');
    if (this.holders.has(name)) return null;
    const token = `tok-${++this.fence}`;
    this.holders.set(name, token);
    return {
      token,
      fence: this.fence,
      extend: () => {
        this.calls.extend++;
        return this.onExtend();
      },
      release: async () => {
        this.calls.release++;
        if (this.holders.get(name) === token) this.holders.delete(name);
      },
    };
  }

  async close(): Promise<void> {}
}

const TTL = 300;
const NAME = 'sweep';

let lock: MemoryLock;
let metrics: Metrics;
let lines: { msg: string; fence?: number }[];

function leases(settings: Partial<LeaseSettings> = {}): SweepLeases {
  const sink = new Writable({ write: (c: Buffer, _e, cb) => (lines.push(JSON.parse(c.toString('utf8')) as { msg: string }), cb()) });
  const log = createLogger({ level: 'warn' }, sink);
  return new SweepLeases(lock, metrics, log, { lockTtlMs: TTL, ...settings });
}

const report = (): LeaseReport => ({ fence: 0, lostLease: false });

async function held(l: SweepLeases, r: LeaseReport = report()): Promise<SweepLease> {
  const lease = await l.begin(NAME, r);
  if (lease === 'contended') throw new Error('contended');
  return lease;
}

const count = async (name: 'lockExtensions' | 'lockAcquisitions', result: string): Promise<number> =>
  (await metrics[name].get()).values.find((v) => v.labels.result === result)?.value ?? 0;
const holder = async (): Promise<number | undefined> => (await metrics.lockHolder.get()).values[0]?.value;

beforeEach(() => {
  vi.useFakeTimers();
  lock = new MemoryLock();
  metrics = createMetrics({ replica: 't', collectDefault: false });
  lines = [];
});
afterEach(() => {
  vi.useRealTimers();
});

describe('sweep lease', () => {
  it('is renewed every TTL/3 while the sweep moves, whatever the sweep is doing; the renewals end with the sweep', async () => {
    const l = leases();
    const lease = await held(l);
    expect(lease).toMatchObject({ held: true, fence: 1 });
    expect(await holder()).toBe(1);
    for (let i = 1; i <= 6; i++) {
      await vi.advanceTimersByTimeAsync(TTL / 3);
      lease.moved();
      expect(lock.calls.extend).toBe(i);
    }
    expect(await count('lockExtensions', 'ok')).toBe(6);
    await lease.end(false);
    await vi.advanceTimersByTimeAsync(3 * TTL);
    expect(lock.calls.extend).toBe(6);
    expect(lock.holders.size).toBe(0);
    expect(await holder()).toBe(0);
  });

  it('a failed renewal aborts the signal, marks the report and ends the renewals', async () => {
    const l = leases();
    const r = report();
    const lease = await held(l, r);
    lock.onExtend = async () => false;
    await vi.advanceTimersByTimeAsync(TTL / 3);
    expect(lease.signal?.aborted).toBe(true);
    expect(r.lostLease).toBe(true);
    expect(await count('lockExtensions', 'lost')).toBe(1);
    await vi.advanceTimersByTimeAsync(3 * TTL);
    expect(lock.calls.extend).toBe(1);
    await lease.end(true); // lost: never kept
    expect(l.keptLeases()).toEqual([]);
  });

  it('a renewal that throws (Redis gone) counts as lost', async () => {
    const lease = await held(leases());
    lock.onExtend = () => Promise.reject(new Error('connection closed'));
    await vi.advanceTimersByTimeAsync(TTL / 3);
    expect(lease.signal?.aborted).toBe(true);
    await lease.end(false);
  });

  it('a sweep with no store step finished for stallMs gives the lease up: signal aborted, released, counted; a moving sweep keeps it', async () => {
    const l = leases({ stallMs: 250 });
    const moving = await held(l);
    for (let i = 0; i < 9; i++) {
      await vi.advanceTimersByTimeAsync(TTL / 3);
      moving.moved();
    }
    expect(moving.signal?.aborted).toBe(false);
    await moving.end(false);

    const r = report();
    const stuck = await held(l, r);
    await vi.advanceTimersByTimeAsync(3 * TTL);
    expect(stuck.signal?.aborted).toBe(true);
    expect(r).toMatchObject({ lostLease: true, stalled: true });
    expect(lock.holders.size).toBe(0); // another replica can take it
    expect((await metrics.loopErrors.get()).values.find((v) => v.labels.loop === 'sweep')?.value).toBe(1);
    await stuck.end(false);
  });

  it('the lock service down: the sweep runs without a lease (held false, fence 0); reachable again: under the lock', async () => {
    const l = leases();
    lock.down = true;
    const without = await held(l);
    expect(without).toMatchObject({ held: false, fence: 0, signal: undefined });
    expect(await count('lockAcquisitions', 'error')).toBe(1);
    expect((await metrics.lockUnavailable.get()).values[0]?.value).toBe(1);
    await without.end(true);
    expect(l.keptLeases()).toEqual([]);
    lock.down = false;
    const lease = await held(l);
    expect(lease.held).toBe(true);
    expect((await metrics.lockUnavailable.get()).values[0]?.value).toBe(0);
    await lease.end(false);
  });

  it('another holder: contended', async () => {
    lock.holders.set(NAME, 'someone else');
    expect(await leases().begin(NAME, report())).toBe('contended');
    expect(await count('lockAcquisitions', 'contended')).toBe(1);
  });

  it('ending twice releases once; releaseKept twice is safe too', async () => {
    const l = leases({ keepLeaseMs: 1000 });
    const once = await held(l);
    await once.end(false);
    await once.end(false);
    expect(lock.calls.release).toBe(1);

    const kept = await held(l);
    await kept.end(true);
    await Promise.all([l.releaseKept(), l.releaseKept()]);
    await l.releaseKept();
    expect(lock.calls.release).toBe(2);
    expect(l.keptLeases()).toEqual([]);
    expect(await holder()).toBe(0);
  });
});

describe('sweep lease kept between sweeps (keepLeaseMs)', () => {
  it('is kept and still renewed after a sweep; the next sweep runs under it (same fence, no new acquisition)', async () => {
    const l = leases({ keepLeaseMs: 1000 });
    const first = await held(l);
    await first.end(true);
    expect(l.keptLeases()).toEqual([NAME]);
    expect(lock.holders.has(NAME)).toBe(true);
    expect(await holder()).toBe(1);
    await vi.advanceTimersByTimeAsync(TTL); // kept: renewed, and no stall counts while no sweep runs
    expect(lock.calls.extend).toBe(3);
    const second = await held(l);
    expect(second.fence).toBe(first.fence);
    expect(lock.calls.acquire).toBe(1);
    expect(l.keptLeases()).toEqual([]);
    await second.end(false);
    expect(lock.holders.size).toBe(0);
  });

  it('is released when no sweep starts within twice keepLeaseMs', async () => {
    const keepLeaseMs = 1000;
    const l = leases({ keepLeaseMs, stallMs: 100 });
    await (await held(l)).end(true);
    await vi.advanceTimersByTimeAsync(keepLeaseMs);
    expect(l.keptLeases()).toEqual([NAME]);
    await vi.advanceTimersByTimeAsync(keepLeaseMs);
    expect(l.keptLeases()).toEqual([]);
    expect(lock.holders.size).toBe(0);
    expect(await holder()).toBe(0);
    const extends_ = lock.calls.extend;
    await vi.advanceTimersByTimeAsync(3 * TTL);
    expect(lock.calls.extend).toBe(extends_); // renewals ended with it
  });

  it('a sweep that starts in time resets the idle limit', async () => {
    const keepLeaseMs = 1000;
    const l = leases({ keepLeaseMs });
    await (await held(l)).end(true);
    await vi.advanceTimersByTimeAsync(1.5 * keepLeaseMs);
    const again = await held(l);
    await again.end(true);
    await vi.advanceTimersByTimeAsync(1.5 * keepLeaseMs);
    expect(l.keptLeases()).toEqual([NAME]);
    await l.releaseKept();
  });

  it('a kept lease whose renewal fails is let go (logged), and the next sweep takes the lock anew', async () => {
    const l = leases({ keepLeaseMs: 10_000 });
    const first = await held(l);
    await first.end(true);
    lock.onExtend = async () => false;
    lock.holders.delete(NAME); // lapsed
    await vi.advanceTimersByTimeAsync(TTL / 3);
    expect(l.keptLeases()).toEqual([]);
    expect(lines.some((x) => x.msg === KEPT_LEASE_LOST && x.fence === first.fence)).toBe(true);
    const next = await held(l);
    expect(next.fence).toBeGreaterThan(first.fence);
    await next.end(false);
  });

  it('a kept lease whose last renewal is more than half a TTL old is renewed before it is used', async () => {
    const l = leases({ keepLeaseMs: 10_000 });
    const first = await held(l);
    await first.end(true);
    // Redis stops answering: the renewal sent at TTL/3 hangs, and no other is sent meanwhile
    lock.onExtend = () => new Promise<boolean>(() => undefined);
    await vi.advanceTimersByTimeAsync(TTL / 2 + 10);
    expect(lock.calls.extend).toBe(1);
    lock.onExtend = async () => true;
    const r = report();
    const second = await held(l, r);
    expect(lock.calls.extend).toBe(2); // renewed by hand before the sweep
    expect(second.fence).toBe(first.fence);
    expect(r.fence).toBe(first.fence);
    expect(lock.calls.acquire).toBe(1);
    await second.end(false);
  });

  it('a kept lease renewed recently is used as it is; one whose renewal by hand fails is given back and the lock taken anew', async () => {
    const l = leases({ keepLeaseMs: 10_000 });
    await (await held(l)).end(true);
    const fresh = await held(l);
    expect(lock.calls.extend).toBe(0);
    await fresh.end(true);

    lock.onExtend = () => new Promise<boolean>(() => undefined);
    await vi.advanceTimersByTimeAsync(TTL / 2 + 10);
    lock.onExtend = async () => false;
    lock.holders.delete(NAME); // it lapsed while Redis did not answer
    const r = report();
    const next = await held(l, r);
    expect(next.fence).toBeGreaterThan(fresh.fence);
    expect(r).toMatchObject({ fence: next.fence, lostLease: false });
    expect(lines.some((x) => x.msg === KEPT_LEASE_LOST)).toBe(true);
    expect(lock.calls.acquire).toBe(2);
    await next.end(false);
  });
});
