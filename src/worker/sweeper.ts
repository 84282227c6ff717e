/**
 * One sweep: take the lock → repair pending escalations → claim due timers in batches
 * (CAS) → escalate them in groups (group commit: one store write per group, see
 * Escalator.escalateBatch; a group that fails is escalated one timer at a time) → release.
 * The event loop gets a turn between groups, so a burst never blocks it for long. The lock only keeps replicas from doing the same
 * work; when the lock service is down every replica sweeps and the CAS keeps each
 * escalation exactly-once. While it holds the lock a timer renews the lease every TTL/3,
 * whatever the sweep is doing (a long batch on a slow store included); when a renewal
 * fails the sweep's abort signal fires: it claims nothing more and finishes only what it
 * already claimed. Renewing is conditional on the sweep moving: a sweep whose store call
 * has not returned for `stallMs` (a server that accepts and never answers) stops renewing
 * and releases the lease, so another replica sweeps instead of every SOS waiting on it.
 * With sweep shards (`shards` > 1) all of this happens per shard, under the shard's own
 * lock and on the shard's timers only, so several replicas escalate at once.
 * With `keepLeaseMs` the lease is kept after a sweep, still renewed, for the next sweep
 * (under a steady load one starts at every deadline, many times a second): no take and no
 * release per sweep. The scheduler gives it back when the next deadline is further away
 * than `keepLeaseMs` (`releaseKept`), and so does the sweeper itself when no sweep starts
 * within twice that, at shutdown, and when a renewal fails. A kept lease whose last renewal
 * is more than half a TTL old (a process paused, a slow Redis) is renewed before it is used.
 */
import { randomInt } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Logger } from 'pino';
import { ALL_SHARDS, shardLockName, type SweepShard } from '../domain/sweep-shard.js';
import type { Timer } from '../domain/timer.js';
import type { Lease, Lock } from '../lock/port.js';
import type { Metrics } from '../metrics.js';
import type { Store } from '../store/port.js';
import type { Escalator } from './escalator.js';

export interface SweepSettings {
  lockName: string;
  lockTtlMs: number;
  /** timers claimed by one statement */
  batchSize: number;
  /** groups of a batch escalated concurrently (1 on a synchronous store: nothing to overlap, only the event loop to block) */
  concurrency: number;
  /** timers escalated by one group-commit write (default 50: one SQLite transaction, a block of the event loop of about 20 ms; docs/performance-notes.md) */
  groupSize?: number;
  /** failed escalations of one timer before it is dead-lettered (`failed`) instead of retried every tick */
  maxEscalationAttempts: number;
  /**
   * A sweep with no store step finished for this long gives its lease up (see `renew`);
   * default max(60 s, 6 × lockTtlMs): far above any step of a healthy store.
   */
  stallMs?: number;
  /**
   * Sweep shards (domain/sweep-shard.ts, default 1): each has its own lock (`lockName`,
   * then `lockName:1` …), and a sweep tries them all in turn, starting one further each
   * time, so replicas escalate different shards at once. Repairs of all-clears and panic
   * texts and the warnings run with shard 0.
   */
  shards?: number;
  /** the wait after a deadline before the SOS (ms, default 0) */
  graceMs?: number;
  /** the nudge before a deadline (./warner.ts), run each sweep before claiming due timers */
  warnings?: { run(): Promise<number> };
  /**
   * Least time between two runs on this replica of the repairs and warnings that are not per
   * timer (all-clears, panic texts, warnings; ms, default 0: every sweep of shard 0). Under a
   * steady load a sweep starts at every deadline, many times a second; these need not: each
   * costs store round trips, and the warning claim a write, before the first due timer is
   * claimed. Applies to the sweeps the scheduler starts (`sweep({ throttled: true })`), which
   * then run them at least every onceEveryMs plus one tick; a sweep called by hand runs them.
   */
  onceEveryMs?: number;
  /** crash repair of panic SOS texts left pending (app/panic.ts); never throws */
  panics?: { repair(limit: number, onError: (err: unknown, incidentId: string) => void): Promise<number> };
  /**
   * Keep the lease from one sweep to the next (ms, default 0: take and release it every
   * sweep; so too with more than one shard, where one replica would end up keeping them
   * all). The scheduler releases it when the next deadline is further away than this,
   * and the sweeper when no sweep starts within twice this. Must not exceed the shortest
   * timer (TIMER_MIN_SECONDS): a replica that arms a timer while another holds the lease
   * finds the lock held at its deadline, so the holder must look again before then.
   */
  keepLeaseMs?: number;
}

/** A lease kept between sweeps, still renewed (see `keepLeaseMs`). */
interface Kept {
  lease: Lease;
  renewal: Renewal;
  /** performance.now() when it was taken */
  since: number;
}

interface Renewal {
  /** fires when the lease is lost (a renewal failed, or the sweep stalled) or the renewals stopped */
  signal: AbortSignal;
  /** performance.now() until which the lease is surely held (the last renewal sent, plus the TTL) */
  validUntil(): number;
  /** renewed by hand (one TTL), the request sent at `sentAt` (performance.now()) */
  renewed(sentAt: number): void;
  /** a sweep is running under it: a stall counts */
  busy(report: SweepReport): void;
  /** kept between sweeps: no stall; released when no sweep starts within `idleMs` */
  idle(idleMs: number, onIdle: () => void): void;
  stop(): void;
}

/** Logged (with the lease's `fence`) when a lease kept between sweeps turns out lost: the next sweep takes the lock anew. */
export const KEPT_LEASE_LOST = 'the sweep lease kept since the last sweep was lost; the next sweep takes the lock anew';

export interface SweepReport {
  outcome: 'swept' | 'contended' | 'swept_without_lock' | 'failed' | 'stopped';
  fence: number;
  claimed: number;
  repaired: number;
  /** false alarms whose pending all-clear this sweep completed (absent: none) */
  allClears?: number;
  /** timers whose person was warned that the deadline is near (absent: none) */
  warned?: number;
  /** panic incidents whose pending texts this sweep completed (absent: none) */
  panicsRepaired?: number;
  escalated: number;
  failed: number;
  lostLease: boolean;
  /** no store step finished for `stallMs`: the sweep gave its lease up (absent: it did not) */
  stalled?: boolean;
  /** with more than one shard: the shard of this report (absent on a sweep of every shard: its sums) */
  shard?: number;
  /** on a sweep of several shards: how many were held by another replica (absent: none) */
  contendedShards?: number;
}

export async function mapLimit<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await fn(item);
      // A synchronous store (better-sqlite3) resolves every await as a microtask: without a
      // turn of the event loop here a whole batch would run in one go, starving Redis
      // replies (lock extension, fan-out publish), sockets, HTTP and signal handlers.
      await nextTurn();
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

export class Sweeper {
  private lockDown = false;
  private stopping = false;
  /** the running sweep has claimed a full batch (see escalatingBacklog) */
  private inBacklog = false;
  /** when this replica last ran the repairs and warnings of every shard (performance.now()) */
  private lastOnceAt = Number.NEGATIVE_INFINITY;
  /** performance.now() when the running sweep last finished a store step (see `renew`) */
  private movedAt = 0;
  /** the shard the next sweep tries first (a random start, so replicas begin on different shards) */
  private nextShard: number;
  /** leases kept after a sweep, by lock name (`keepLeaseMs`) */
  private readonly kept = new Map<string, Kept>();

  /**
   * This replica is escalating a backlog (the running sweep claimed a full batch, so more is
   * due than one claim takes): the dispatcher claims no new texts meanwhile (it bounds the
   * wait), so a burst's incidents are committed first, then its texts go out.
   */
  escalatingBacklog(): boolean {
    return this.inBacklog;
  }

  /** Shutdown: the running sweep finishes what it claimed and claims nothing more; later sweeps do nothing. */
  stopClaiming(): void {
    this.stopping = true;
  }

  /** Give back every lease kept between sweeps (next deadline far away, shutdown). Never throws; safe to call twice. */
  async releaseKept(): Promise<void> {
    const all = [...this.kept.keys()];
    await Promise.all(all.map((name) => this.letGo(name)));
  }

  /** Lock names whose lease this replica keeps between sweeps (tests, metrics). */
  keptLeases(): string[] {
    return [...this.kept.keys()];
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
    this.metrics.lockHeld.observe((performance.now() - since) / 1000);
    if (this.kept.size === 0) this.metrics.lockHolder.set(0);
    await lease.release().catch((err: unknown) => this.log.warn({ err }, 'lock release failed; the lease will lapse by TTL'));
  }

  /**
   * The lease kept from the last sweep of `name`, now `report`'s, when it is surely still
   * held: renewed first when its last renewal is more than half a TTL old (a paused
   * process, a slow Redis). Else null (given back), and the sweep takes the lock anew.
   */
  private async reuse(name: string, report: SweepReport): Promise<Kept | null> {
    const kept = this.kept.get(name);
    if (!kept) return null;
    this.kept.delete(name);
    const { lease, renewal } = kept;
    this.moved();
    renewal.busy(report);
    if (!renewal.signal.aborted && performance.now() > renewal.validUntil() - this.settings.lockTtlMs / 2) {
      const sent = performance.now();
      const ok = await lease.extend(this.settings.lockTtlMs).catch(() => false);
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

  constructor(
    private readonly store: Store,
    private readonly lock: Lock,
    private readonly escalator: Escalator,
    private readonly metrics: Metrics,
    private readonly log: Logger,
    private readonly settings: SweepSettings,
  ) {
    this.nextShard = randomInt(this.shardCount());
  }

  private shardCount(): number {
    return Math.max(1, Math.floor(this.settings.shards ?? 1));
  }

  /**
   * Sweep every shard this replica can take, one after the other (one shard: the one lock).
   * The report adds the shards' figures up; its outcome is `swept` when any shard was swept
   * (then the caller plans the next wake-up), `contended` when every lock was held elsewhere.
   */
  async sweep(opts: { throttled?: boolean } = {}): Promise<SweepReport> {
    const throttled = opts.throttled ?? false;
    const of = this.shardCount();
    if (of === 1) return this.sweepShard(ALL_SHARDS, throttled);
    const first = this.nextShard;
    this.nextShard = (first + 1) % of;
    const reports: SweepReport[] = [];
    for (let i = 0; i < of; i++) {
      const report = await this.sweepShard({ index: (first + i) % of, of }, throttled);
      reports.push(report);
      if (report.outcome === 'stopped') break;
    }
    return combine(reports);
  }

  private async sweepShard(shard: SweepShard, throttled: boolean): Promise<SweepReport> {
    const report: SweepReport = { outcome: 'swept', fence: 0, claimed: 0, repaired: 0, escalated: 0, failed: 0, lostLease: false };
    if (shard.of > 1) report.shard = shard.index;
    if (this.stopping) return { ...report, outcome: 'stopped' };
    const name = shardLockName(this.settings.lockName, shard);
    // no await unless a lease is kept: the lock is asked for in the same turn as the sweep starts
    const kept = this.kept.has(name) ? await this.reuse(name, report) : null;
    let lease: Lease | null = kept?.lease ?? null;
    if (!kept) {
      const taken = await this.take(name, report);
      if (taken === 'contended') return { ...report, outcome: 'contended' };
      lease = taken;
    }
    if (lease) report.fence = lease.fence;

    const started = kept?.since ?? performance.now();
    const startedAt = new Date();
    const end = this.metrics.sweepDuration.startTimer();
    if (lease) this.metrics.lockHolder.set(1);
    this.moved();
    const renewal = kept?.renewal ?? (lease ? this.renew(lease) : undefined);
    if (!kept) renewal?.busy(report);
    try {
      await this.run(renewal?.signal, report, shard, throttled);
      this.metrics.lastSweep.set(Date.now() / 1000);
      this.metrics.sweeps.inc({ outcome: report.outcome });
    } catch (err) {
      report.outcome = 'failed';
      this.metrics.sweeps.inc({ outcome: 'failed' });
      this.metrics.loopErrors.inc({ loop: 'sweep' });
      this.log.error({ err, fence: report.fence }, 'sweep failed; the next tick retries');
    } finally {
      end();
      this.metrics.sweepClaimed.observe(report.claimed);
      // with sweep shards the leases are not kept: one replica would end up holding every shard
      const keepMs = this.shardCount() === 1 ? (this.settings.keepLeaseMs ?? 0) : 0;
      if (lease && renewal && keepMs > 0 && !this.stopping && !renewal.signal.aborted && report.outcome === 'swept') {
        // kept for the next sweep, still renewed; given back if none starts soon
        this.kept.set(name, { lease, renewal, since: started });
        renewal.idle(2 * keepMs, () => void this.letGo(name));
      } else {
        renewal?.stop();
        if (lease) {
          if (this.kept.size === 0) this.metrics.lockHolder.set(0);
          this.metrics.lockHeld.observe((performance.now() - started) / 1000);
          await lease.release().catch((err: unknown) => this.log.warn({ err }, 'lock release failed; the lease will lapse by TTL'));
        }
      }
      // one line per sweep that held the lock or ran without it: which fence swept when, and what it did
      const busy =
        report.claimed > 0 ||
        report.repaired > 0 ||
        (report.allClears ?? 0) > 0 ||
        (report.warned ?? 0) > 0 ||
        (report.panicsRepaired ?? 0) > 0 ||
        report.failed > 0 ||
        report.lostLease ||
        report.outcome !== 'swept';
      this.log[busy ? 'info' : 'debug'](
        { sweep: { ...report, startedAt: startedAt.toISOString(), endedAt: new Date().toISOString() } },
        'sweep',
      );
    }
    return report;
  }

  /** Take the lock of `name`: the lease, `contended`, or null when the lock service is down (then the sweep runs without it: `report.outcome`). */
  private async take(name: string, report: SweepReport): Promise<Lease | 'contended' | null> {
    try {
      const lease = await this.lock.acquire(name, this.settings.lockTtlMs);
      if (this.lockDown) {
        this.lockDown = false;
        this.metrics.lockUnavailable.set(0);
        this.log.warn('lock service reachable again; sweeping under the lock');
      }
      if (!lease) {
        this.metrics.lockAcquisitions.inc({ result: 'contended' });
        this.metrics.sweeps.inc({ outcome: 'contended' });
        return 'contended';
      }
      this.metrics.lockAcquisitions.inc({ result: 'won' });
      return lease;
    } catch (err) {
      // a safety service must not stop escalating because its cache is down
      this.metrics.lockAcquisitions.inc({ result: 'error' });
      this.metrics.lockUnavailable.set(1);
      if (!this.lockDown)
        this.log.warn({ err }, 'lock service unreachable: sweeping without the lock (the store CAS keeps escalations exactly-once)');
      this.lockDown = true;
      report.outcome = 'swept_without_lock';
      return null;
    }
  }

  /**
   * Renew the lease every TTL/3 on a timer, independent of the work: a batch slower than
   * the TTL must not let it lapse. The first failed renewal aborts the signal and ends
   * the renewals; `stop()` ends them when the lease is given back. While a sweep runs
   * (`busy`) a stall counts; while the lease is kept between sweeps (`idle`) it does not,
   * and the lease goes back when no sweep starts in time or a renewal fails.
   */
  private renew(lease: Lease): Renewal {
    const { lockTtlMs } = this.settings;
    const lost = new AbortController();
    let extending = false;
    let report: SweepReport | undefined;
    let idleTimer: NodeJS.Timeout | undefined;
    let onIdleEnd: (() => void) | undefined;
    let validUntil = performance.now() + lockTtlMs;
    const stallMs = this.settings.stallMs ?? Math.max(60_000, 6 * lockTtlMs);
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

  private async run(lost: AbortSignal | undefined, report: SweepReport, shard: SweepShard, throttled: boolean): Promise<void> {
    const { batchSize } = this.settings;

    // 1. repair: escalations left pending by a crash (or by a failed escalation), this shard's
    const pending = await this.store.pendingEscalations(batchSize, shard);
    this.moved();
    report.repaired = pending.length;
    await this.escalateAll(pending, report);

    // the repairs and warnings that are not per timer run once per sweep of every shard (with
    // shard 0); on a scheduled sweep at most every `onceEveryMs`
    const every = throttled ? (this.settings.onceEveryMs ?? 0) : 0;
    if (shard.index === 0 && performance.now() - this.lastOnceAt >= every) {
      this.lastOnceAt = performance.now();
      await this.onceForAllShards(lost, report);
    }
    this.moved();

    // 2. claim due timers, batch after batch, while the lease holds
    try {
      for (;;) {
        await nextTurn(); // let a shutdown signal or a lost lease be seen before claiming more
        if (this.stopping || lost?.aborted) return;
        const batch = await this.store.claimDueTimers(batchSize, report.fence, this.settings.graceMs ?? 0, shard);
        this.moved();
        report.claimed += batch.length;
        if (batch.length === batchSize) this.inBacklog = true;
        await this.escalateAll(batch, report);
        if (batch.length < batchSize) return;
      }
    } finally {
      this.inBacklog = false;
    }
  }

  private async onceForAllShards(lost: AbortSignal | undefined, report: SweepReport): Promise<void> {
    const { batchSize } = this.settings;

    // 1b. repair: all-clears owed by false alarms whose request failed or crashed half-way
    for (const incident of await this.store.pendingAllClears(batchSize)) {
      try {
        await this.escalator.completeAllClear(incident);
        this.moved();
        report.allClears = (report.allClears ?? 0) + 1;
      } catch (err) {
        this.metrics.loopErrors.inc({ loop: 'sweep' });
        this.log.error({ err, incident: incident.id }, 'all-clear repair failed; left pending for the next tick');
      }
    }

    // 1b'. repair: panic SOS texts left pending by a request that died half-way
    if (this.settings.panics) {
      const n = await this.settings.panics.repair(batchSize, (err, incident) => {
        this.metrics.loopErrors.inc({ loop: 'sweep' });
        this.log.error({ err, incident }, 'panic texts repair failed; left pending for the next tick');
      });
      if (n > 0) report.panicsRepaired = n;
    }

    this.moved();
    // 1c. the nudge before the SOS
    await this.warn(lost, report);
  }

  /** Warnings never stop the sweep: a failure is logged and counted, the SOS path goes on. */
  private async warn(lost: AbortSignal | undefined, report: SweepReport): Promise<void> {
    const { warnings } = this.settings;
    if (!warnings || this.stopping || lost?.aborted) return;
    try {
      const n = await warnings.run();
      if (n > 0) report.warned = n;
    } catch (err) {
      this.metrics.loopErrors.inc({ loop: 'sweep' });
      this.log.error({ err }, 'warning claim failed; the next tick retries');
    }
  }

  private async escalateAll(timers: Timer[], report: SweepReport): Promise<void> {
    const size = Math.max(1, this.settings.groupSize ?? 50);
    const groups: Timer[][] = [];
    for (let i = 0; i < timers.length; i += size) groups.push(timers.slice(i, i + size));
    await mapLimit(groups, this.settings.concurrency, async (group) => {
      try {
        await this.escalator.escalateBatch(group, report.fence);
        this.moved();
        report.escalated += group.length;
      } catch (err) {
        this.moved();
        // every escalation of the group is still pending: one at a time, each failure is counted (and dead-lettered) alone
        this.log.warn({ err, timers: group.length }, 'group escalation failed; escalating its timers one at a time');
        await this.escalateEach(group, report);
      }
    });
  }

  private async escalateEach(timers: Timer[], report: SweepReport): Promise<void> {
    for (const t of timers) {
      try {
        await this.escalator.escalate(t, t.expiredByFence ?? report.fence);
        report.escalated++;
      } catch (err) {
        report.failed++;
        this.metrics.escalationErrors.inc();
        await this.countFailure(t, t.expiredByFence ?? report.fence, err);
      }
      this.moved();
      await nextTurn();
    }
  }

  /** A store step of the running sweep finished: its lease may be renewed (see `renew`). */
  private moved(): void {
    this.movedAt = performance.now();
  }

  /** Left pending for the next tick, until it has failed `maxEscalationAttempts` times: then dead-lettered. */
  private async countFailure(t: Timer, fence: number, err: unknown): Promise<void> {
    const error = (err instanceof Error ? err.message : String(err)).slice(0, 500);
    const counted = await this.store.recordEscalationFailure(t.id, error, this.settings.maxEscalationAttempts).catch((e: unknown) => {
      this.log.error({ err: e, timer: t.id }, 'could not count the failed escalation');
      return null;
    });
    if (counted?.escalation === 'failed') {
      this.metrics.escalationsDeadLettered.inc();
      const incident = await this.escalator.openForModerators(t, fence);
      this.log.error(
        {
          err,
          timer: t.id,
          user: t.userId,
          incident: incident?.id,
          attempts: counted.escalationAttempts,
          deadline: t.expiresAt.toISOString(),
        },
        'escalation failed too many times: dead-lettered, no longer retried; a moderator must act (GET /v1/admin/escalations/failed)',
      );
      return;
    }
    this.log.error({ err, timer: t.id, attempts: counted?.escalationAttempts }, 'escalation failed; left pending for the next tick');
  }
}

const OUTCOME_RANK: SweepReport['outcome'][] = ['swept_without_lock', 'swept', 'failed', 'contended', 'stopped'];

/** One report for a sweep of several shards: figures added up, the most telling outcome. */
function combine(reports: SweepReport[]): SweepReport {
  const sum = (pick: (r: SweepReport) => number | undefined): number => reports.reduce((n, r) => n + (pick(r) ?? 0), 0);
  const outcome = OUTCOME_RANK.find((o) => reports.some((r) => r.outcome === o)) ?? 'stopped';
  const optional = (n: number): number | undefined => (n > 0 ? n : undefined);
  const report: SweepReport = {
    outcome,
    fence: Math.max(0, ...reports.map((r) => r.fence)),
    claimed: sum((r) => r.claimed),
    repaired: sum((r) => r.repaired),
    escalated: sum((r) => r.escalated),
    failed: sum((r) => r.failed),
    lostLease: reports.some((r) => r.lostLease),
  };
  const extras = {
    allClears: optional(sum((r) => r.allClears)),
    warned: optional(sum((r) => r.warned)),
    panicsRepaired: optional(sum((r) => r.panicsRepaired)),
    stalled: reports.some((r) => r.stalled) || undefined,
    contendedShards: optional(reports.filter((r) => r.outcome === 'contended').length),
  };
  for (const [k, v] of Object.entries(extras)) if (v !== undefined) Object.assign(report, { [k]: v });
  return report;
}
