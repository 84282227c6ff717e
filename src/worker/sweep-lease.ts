/**
 * The sweep lock's lease, for the sweeper: take it (or sweep without it when the lock service
 * is down: the store CAS keeps escalations exactly-once), renew it every TTL/3 on a timer
 * whatever the sweep is doing (a batch slower than the TTL must not let it lapse), and give
 * it back. The first failed renewal aborts the lease's signal: the sweep claims nothing more
 * and finishes only what it already claimed. Renewing is conditional on the sweep moving: a
 * sweep whose store call has not returned for `stallMs` (a server that accepts and never
 * answers) stops renewing and releases the lease, so another replica sweeps instead of every
 * SOS waiting on it.
 * With `keepLeaseMs` a lease is kept after a sweep, still renewed, for the next sweep (under
 * a steady load one starts at every deadline, many times a second): no take and no release
 * per sweep. It goes back when no sweep starts within twice `keepLeaseMs`, when a renewal
 * fails, and on `releaseKept` (the scheduler: next deadline far away, shutdown). A kept lease
 * whose last renewal is more than half a TTL old (a process paused, a slow Redis) is renewed
 * before it is used.
 */
import type { Logger } from 'pino';
import type { Lease, Lock } from '../lock/port.js';
import type { Metrics } from '../metrics.js';

export interface LeaseSettings {
  lockTtlMs: number;
  /**
   * A sweep with no store step finished for this long gives its lease up (see `SweepLease.moved`);
   * default max(60 s, 6 × lockTtlMs): far above any step of a healthy store.
   */
  stallMs?: number;
  /**
   * Keep the lease from one sweep to the next (ms, default 0: take and release it every
   * sweep; so too with more than one shard, where one replica would end up keeping them
   * all: the sweeper asks to keep none). The scheduler releases it when the next deadline is
   * further away than this, and the lease itself goes back when no sweep starts within twice
   * this. Must not exceed the shortest timer (TIMER_MIN_SECONDS): a replica that arms a timer
   * while another holds the lease finds the lock held at its deadline, so the holder must
   * look again before then.
   */
  keepLeaseMs?: number;
}

/** The metrics the lease reports to (the lock's own, and a stall as a sweep loop error). */
export type LeaseMetrics = Pick<
  Metrics,
  'lockAcquisitions' | 'lockUnavailable' | 'lockExtensions' | 'lockHolder' | 'lockHeld' | 'loopErrors'
>;

/** The part of a sweep's report the lease writes: a lost lease, a stall. */
export interface LeaseReport {
  fence: number;
  lostLease: boolean;
  stalled?: boolean;
}

/** What one sweep runs under: a lease (taken or kept from the last sweep), or none when the lock service is down. */
export interface SweepLease {
  /** false: the lock service is down and the sweep runs without the lock (the store CAS keeps it exactly-once) */
  readonly held: boolean;
  /** the lease's fence (0: swept without the lock) */
  readonly fence: number;
  /** aborted when the lease is lost (a renewal failed, the sweep stalled); undefined without a lease */
  readonly signal: AbortSignal | undefined;
  /** a store step of the sweep finished: the lease may be renewed (a stall is measured from the last one) */
  moved(): void;
  /** The sweep is over: keep the lease for the next one (`keep` and `keepLeaseMs` > 0), else give it back. Never throws; safe to call twice. */
  end(keep: boolean): Promise<void>;
}

/** Logged (with the lease's `fence`) when a lease kept between sweeps turns out lost: the next sweep takes the lock anew. */
export const KEPT_LEASE_LOST = 'the sweep lease kept since the last sweep was lost; the next sweep takes the lock anew';

/** Default `stallMs`: at least a minute, and at least six TTLs. */
const STALL_FLOOR_MS = 60_000;
const STALL_TTLS = 6;

interface Renewal {
  /** fires when the lease is lost (a renewal failed, or the sweep stalled) or the renewals stopped */
  signal: AbortSignal;
  /** performance.now() until which the lease is surely held (the last renewal sent, plus the TTL) */
  validUntil(): number;
  /** renewed by hand (one TTL), the request sent at `sentAt` (performance.now()) */
  renewed(sentAt: number): void;
  /** a sweep is running under it: a stall counts */
  busy(report: LeaseReport): void;
  /** kept between sweeps: no stall; released when no sweep starts within `idleMs` */
  idle(idleMs: number, onIdle: () => void): void;
  stop(): void;
}

/** A lease kept between sweeps, still renewed. */
interface Kept {
  lease: Lease;
  renewal: Renewal;
  /** performance.now() when it was taken */
  since: number;
}

export class SweepLeases {
  private lockDown = false;
  /** performance.now() when the running sweep last finished a store step */
  private movedAt = 0;
  /** leases kept after a sweep, by lock name */
  private readonly kept = new Map<string, Kept>();

  constructor(
    private readonly lock: Lock,
    private readonly metrics: LeaseMetrics,
    private readonly log: Logger,
    private readonly settings: LeaseSettings,
  ) {}

  /**
   * The lease for a sweep of `name`: the one kept from the last sweep when it is surely still
   * held, else a new one; `contended` when another replica holds the lock. Without a kept
   * lease the lock is asked for in the same turn as this call (no await before it).
   */
  async begin(name: string, report: LeaseReport): Promise<SweepLease | 'contended'> {
    const kept = this.kept.has(name) ? await this.reuse(name, report) : null;
    if (kept) return this.running(name, kept, report);
    const lease = await this.take(name);
    if (lease === 'contended') return lease;
    if (!lease) return { held: false, fence: 0, signal: undefined, moved: () => this.moved(), end: async () => undefined };
    return this.running(name, { lease, renewal: this.renew(lease), since: performance.now() }, report);
  }

  /** Give back every lease kept between sweeps. Never throws; safe to call twice. */
  async releaseKept(): Promise<void> {
    await Promise.all([...this.kept.keys()].map((name) => this.letGo(name)));
  }

  /** Lock names whose lease is kept between sweeps. */
  keptLeases(): string[] {
    return [...this.kept.keys()];
  }

  private moved(): void {
    this.movedAt = performance.now();
  }

  private running(name: string, held: Kept, report: LeaseReport): SweepLease {
    const { lease, renewal } = held;
    report.fence = lease.fence;
    this.metrics.lockHolder.set(1);
    this.moved();
    renewal.busy(report);
    let ended = false;
    return {
      held: true,
      fence: lease.fence,
      signal: renewal.signal,
      moved: () => this.moved(),
      end: async (keep) => {
        if (ended) return;
        ended = true;
        const keepMs = this.settings.keepLeaseMs ?? 0;
        if (keep && keepMs > 0 && !renewal.signal.aborted) {
          // kept for the next sweep, still renewed; given back if none starts soon
          this.kept.set(name, held);
          renewal.idle(2 * keepMs, () => void this.letGo(name));
          return;
        }
        await this.giveBack(held);
      },
    };
  }

  /** Give back the lease kept for `name`, if any. Never throws. */
  private async letGo(name: string): Promise<void> {
    const kept = this.kept.get(name);
    if (!kept) return;
    this.kept.delete(name);
    await this.giveBack(kept);
  }

  private async giveBack({ lease, renewal, since }: Kept): Promise<void> {
    renewal.stop();
    if (this.kept.size === 0) this.metrics.lockHolder.set(0);
    this.metrics.lockHeld.observe((performance.now() - since) / 1000);
    await lease.release().catch((err: unknown) => this.log.warn({ err }, 'lock release failed; the lease will lapse by TTL'));
  }

  /**
   * The lease kept from the last sweep of `name`, now `report`'s, when it is surely still
   * held: renewed first when its last renewal is more than half a TTL old (a paused
   * process, a slow Redis). Else null (given back), and the sweep takes the lock anew.
   */
  private async reuse(name: string, report: LeaseReport): Promise<Kept | null> {
    const kept = this.kept.get(name);
    if (!kept) return null;
    this.kept.delete(name);
    const { lease, renewal } = kept;
    const { lockTtlMs } = this.settings;
    this.moved();
    renewal.busy(report);
    if (!renewal.signal.aborted && performance.now() > renewal.validUntil() - lockTtlMs / 2) {
      const sent = performance.now();
      const ok = await lease.extend(lockTtlMs).catch(() => false);
      this.metrics.lockExtensions.inc({ result: ok ? 'ok' : 'lost' });
      if (ok) renewal.renewed(sent);
      else {
        renewal.stop();
        this.log.warn({ fence: lease.fence }, KEPT_LEASE_LOST);
      }
    }
    if (!renewal.signal.aborted) return kept;
    report.lostLease = false; // lost before this sweep began: it sweeps under a new lease or none
    await this.giveBack(kept);
    return null;
  }

  /** Take the lock of `name`: the lease, `contended`, or null when the lock service is down (then the sweep runs without it). */
  private async take(name: string): Promise<Lease | 'contended' | null> {
    try {
      const lease = await this.lock.acquire(name, this.settings.lockTtlMs);
      if (this.lockDown) {
        this.lockDown = false;
        this.metrics.lockUnavailable.set(0);
        this.log.warn('lock service reachable again; sweeping under the lock');
      }
      this.metrics.lockAcquisitions.inc({ result: lease ? 'won' : 'contended' });
      return lease ?? 'contended';
    } catch (err) {
      // a safety service must not stop escalating because its cache is down
      this.metrics.lockAcquisitions.inc({ result: 'error' });
      this.metrics.lockUnavailable.set(1);
      if (!this.lockDown)
        this.log.warn({ err }, 'lock service unreachable: sweeping without the lock (the store CAS keeps escalations exactly-once)');
      this.lockDown = true;
      return null;
    }
  }

  /**
   * Renew the lease every TTL/3 on a timer, independent of the work. The first failed
   * renewal aborts the signal and ends the renewals; `stop()` ends them when the lease is
   * given back. While a sweep runs (`busy`) a stall counts; while the lease is kept between
   * sweeps (`idle`) it does not, and the lease goes back when no sweep starts in time or a
   * renewal fails.
   */
  private renew(lease: Lease): Renewal {
    const { lockTtlMs } = this.settings;
    const lost = new AbortController();
    let extending = false;
    let report: LeaseReport | undefined;
    let idleTimer: NodeJS.Timeout | undefined;
    let onIdleEnd: (() => void) | undefined;
    let validUntil = performance.now() + lockTtlMs;
    const stallMs = this.settings.stallMs ?? Math.max(STALL_FLOOR_MS, STALL_TTLS * lockTtlMs);
    /** No longer idle: the idle limit is off; answers what was to run at its end. */
    const notIdle = (): (() => void) | undefined => {
      if (idleTimer) clearTimeout(idleTimer);
      idleTimer = undefined;
      const end = onIdleEnd;
      onIdleEnd = undefined;
      return end;
    };
    const endIdle = () => notIdle()?.();
    const timer = setInterval(() => {
      if (lost.signal.aborted) return;
      const still = performance.now() - this.movedAt;
      if (report && still > stallMs) {
        // a store call that never returns must not hold the lock for ever: every SOS would wait on it
        clearInterval(timer);
        report.lostLease = true;
        report.stalled = true;
        lost.abort();
        this.metrics.loopErrors.inc({ loop: 'sweep' });
        this.log.error(
          { fence: report.fence, stalledMs: Math.round(still) },
          'sweep stalled: no store step finished for too long; giving the lease up so that another replica sweeps',
        );
        void lease.release().catch(() => undefined);
        return;
      }
      if (extending) return; // a renewal still waiting for Redis: do not pile up
      extending = true;
      const sent = performance.now();
      void lease
        .extend(lockTtlMs)
        .catch(() => false)
        .then((ok) => {
          extending = false;
          if (lost.signal.aborted) return; // the lease was given back meanwhile
          this.metrics.lockExtensions.inc({ result: ok ? 'ok' : 'lost' });
          if (ok) {
            validUntil = Math.max(validUntil, sent + lockTtlMs);
            return;
          }
          clearInterval(timer);
          lost.abort();
          if (report) {
            report.lostLease = true;
            this.log.warn({ fence: report.fence }, 'lost the sweep lease; finishing what was claimed and claiming nothing more');
          } else {
            this.log.warn({ fence: lease.fence }, KEPT_LEASE_LOST);
            endIdle();
          }
        });
    }, lockTtlMs / 3);
    return {
      signal: lost.signal,
      validUntil: () => validUntil,
      renewed: (sentAt) => {
        validUntil = Math.max(validUntil, sentAt + lockTtlMs);
      },
      busy: (r) => {
        notIdle();
        report = r;
      },
      idle: (idleMs, onEnd) => {
        report = undefined;
        onIdleEnd = onEnd;
        idleTimer = setTimeout(endIdle, idleMs);
      },
      stop: () => {
        clearInterval(timer);
        notIdle();
        if (!lost.signal.aborted) lost.abort();
      },
    };
  }
}
