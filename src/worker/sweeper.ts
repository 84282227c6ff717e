/**
 * One sweep: take the lease (./sweep-lease.ts) → repair pending escalations → claim due
 * timers in batches (CAS) → escalate them in groups (group commit: one store write per group,
 * see Escalator.escalateBatch; a group that fails is escalated one timer at a time) → the
 * repairs that are not per timer (all-clears, panic texts) and the warnings → give the lease
 * back or keep it for the next sweep. Claiming never waits on those repairs, and no step's
 * failure stops the next: each is caught, logged and counted on its own.
 * An escalation that fails because the store is unavailable (domain/errors.ts isTransient) is
 * not counted toward `maxEscalationAttempts`: it waits a backoff (./escalation-retries.ts)
 * and is tried again for as long as it takes; only other failures count and dead-letter.
 * The event loop gets a turn between groups, so
 * a burst never blocks it for long. The lock only keeps replicas from doing the same work;
 * when the lock service is down every replica sweeps and the CAS keeps each escalation
 * exactly-once. When the lease is lost (a renewal failed, or this sweep stalled) its signal
 * fires: the sweep claims nothing more and finishes only what it already claimed; every
 * finished store step tells the lease the sweep is moving.
 * With sweep shards (`shards` > 1) all of this happens per shard, under the shard's own
 * lock and on the shard's timers only, so several replicas escalate at once.
 */
import { randomInt } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Logger } from 'pino';
import { isTransient } from '../domain/errors.js';
import { ALL_SHARDS, shardLockName, type SweepShard } from '../domain/sweep-shard.js';
import type { Timer } from '../domain/timer.js';
import type { Lock } from '../lock/port.js';
import type { Metrics } from '../metrics.js';
import type { Store } from '../store/port.js';
import { EscalationRetries, type TransientRetry } from './escalation-retries.js';
import type { Escalator } from './escalator.js';
import { SweepLeases, type LeaseSettings, type SweepLease } from './sweep-lease.js';

const TRANSIENT_FAILURE =
  'escalation failed: the store is unavailable; not counted toward ESCALATION_MAX_ATTEMPTS, left pending and tried again after a backoff';

/** Sweeper `transientRetry` when none is given (see there). */
const DEFAULT_TRANSIENT_RETRY: TransientRetry = { baseMs: 500, capMs: 10_000 };

/** The lease's settings (`lockTtlMs`, `stallMs`, `keepLeaseMs`: ./sweep-lease.ts) and the sweep's. */
export interface SweepSettings extends LeaseSettings {
  lockName: string;
  /** timers claimed by one statement */
  batchSize: number;
  /** groups of a batch escalated concurrently (1 on a synchronous store: nothing to overlap, only the event loop to block) */
  concurrency: number;
  /** timers escalated by one group-commit write (default 50: one SQLite transaction, a block of the event loop of about 20 ms; docs/architecture.md, "Why a burst stays on time") */
  groupSize?: number;
  /**
   * failed escalations of one timer before it is dead-lettered (`failed`) instead of retried
   * every tick; failures because the store is unavailable are not counted (see `transientRetry`)
   */
  maxEscalationAttempts: number;
  /**
   * The wait before an escalation that failed because the store was unavailable is tried again
   * (./escalation-retries.ts; default 500 ms, doubling per failure in a row up to 10 s: a sick
   * store is asked a few times a minute per timer, and a recovered one escalates within 10 s).
   */
  transientRetry?: TransientRetry;
  /**
   * Sweep shards (domain/sweep-shard.ts, default 1): each has its own lock (`lockName`,
   * then `lockName:1` …), and a sweep tries them all in turn, starting one further each
   * time, so replicas escalate different shards at once. Repairs of all-clears and panic
   * texts and the warnings run with shard 0.
   */
  shards?: number;
  /** the wait after a deadline before the SOS (ms, default 0) */
  graceMs?: number;
  /** the nudge before a deadline (./warner.ts), run each sweep after claiming due timers */
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
  /** crash repair of owed duress SOS and of panic SOS texts left pending (app/panic.ts); should not throw (the sweep catches it if it does) */
  panics?: { repair(limit: number, onError: (err: unknown, about?: { incident?: string; timer?: string }) => void): Promise<number> };
}

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
  /** escalations that failed in this sweep (`transient` of them included) */
  failed: number;
  /** of `failed`, those that failed because the store was unavailable: not counted toward the attempts, retried after a backoff (absent: none) */
  transient?: number;
  /** pending escalations not tried in this sweep: still waiting the backoff of a transient failure (absent: none) */
  waiting?: number;
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
  private stopping = false;
  /** the running sweep has claimed a full batch (see escalatingBacklog) */
  private inBacklog = false;
  /** when this replica last ran the repairs and warnings of every shard (performance.now()) */
  private lastOnceAt = Number.NEGATIVE_INFINITY;
  /** the shard the next sweep tries first (a random start, so replicas begin on different shards) */
  private nextShard: number;
  private readonly leases: SweepLeases;
  private readonly retries: EscalationRetries;

  constructor(
    private readonly store: Store,
    lock: Lock,
    private readonly escalator: Escalator,
    private readonly metrics: Metrics,
    private readonly log: Logger,
    private readonly settings: SweepSettings,
  ) {
    this.nextShard = randomInt(this.shardCount());
    this.leases = new SweepLeases(lock, metrics, log, settings);
    this.retries = new EscalationRetries(settings.transientRetry ?? DEFAULT_TRANSIENT_RETRY);
  }

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
  releaseKept(): Promise<void> {
    return this.leases.releaseKept();
  }

  /** Lock names whose lease this replica keeps between sweeps (tests, metrics). */
  keptLeases(): string[] {
    return this.leases.keptLeases();
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
    const lease = await this.leases.begin(shardLockName(this.settings.lockName, shard), report);
    if (lease === 'contended') {
      this.metrics.sweeps.inc({ outcome: 'contended' });
      return { ...report, outcome: 'contended' };
    }
    if (!lease.held) report.outcome = 'swept_without_lock';

    const startedAt = new Date();
    const end = this.metrics.sweepDuration.startTimer();
    try {
      await this.run(lease, report, shard, throttled);
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
      await lease.end(this.shardCount() === 1 && !this.stopping && report.outcome === 'swept');
      // one line per sweep that held the lock or ran without it: which fence swept when, and what it did
      const busy =
        report.claimed > 0 ||
        report.repaired > 0 ||
        (report.allClears ?? 0) > 0 ||
        (report.warned ?? 0) > 0 ||
        (report.panicsRepaired ?? 0) > 0 ||
        report.failed > 0 ||
        (report.waiting ?? 0) > 0 ||
        report.lostLease ||
        report.outcome !== 'swept';
      this.log[busy ? 'info' : 'debug'](
        { sweep: { ...report, startedAt: startedAt.toISOString(), endedAt: new Date().toISOString() } },
        'sweep',
      );
    }
    return report;
  }

  private async run(lease: SweepLease, report: SweepReport, shard: SweepShard, throttled: boolean): Promise<void> {
    // 1. repair: escalations left pending by a crash (or by a failed escalation), this shard's
    await this.repairPending(lease, report, shard);
    lease.moved();

    // 2. claim due timers, batch after batch, while the lease holds; a failed claim fails the
    // sweep, after the repairs of step 3 had their turn
    const claimed = await this.claimDue(lease, report, shard).then(
      () => undefined,
      (err: unknown) => ({ err }),
    );

    // 3. the repairs and warnings that are not per timer, after the claim (a failing one never
    // holds the SOS up): once per sweep of every shard (with shard 0); on a scheduled sweep at
    // most every `onceEveryMs`
    const every = throttled ? (this.settings.onceEveryMs ?? 0) : 0;
    if (!this.stopping && !lease.signal?.aborted && shard.index === 0 && performance.now() - this.lastOnceAt >= every) {
      this.lastOnceAt = performance.now();
      await this.onceForAllShards(lease, report);
    }
    if (claimed) throw claimed.err;
  }

  /** Escalations still pending (crash, failure), those not waiting a backoff. A failing read is logged and counted; the claim goes on. */
  private async repairPending(lease: SweepLease, report: SweepReport, shard: SweepShard): Promise<void> {
    let pending: Timer[];
    try {
      pending = await this.store.pendingEscalations(this.settings.batchSize, shard);
    } catch (err) {
      this.metrics.loopErrors.inc({ loop: 'sweep' });
      this.log.error({ err }, 'reading pending escalations failed; claiming due timers anyway, the next tick retries');
      return;
    }
    lease.moved();
    const ready = pending.filter((t) => this.retries.ready(t.id));
    if (ready.length < pending.length) report.waiting = pending.length - ready.length;
    report.repaired = ready.length;
    await this.escalateAll(ready, report, lease);
  }

  private async claimDue(lease: SweepLease, report: SweepReport, shard: SweepShard): Promise<void> {
    const { batchSize } = this.settings;
    try {
      for (;;) {
        await nextTurn(); // let a shutdown signal or a lost lease be seen before claiming more
        if (this.stopping || lease.signal?.aborted) return;
        const batch = await this.store.claimDueTimers(batchSize, report.fence, this.settings.graceMs ?? 0, shard);
        lease.moved();
        report.claimed += batch.length;
        if (batch.length === batchSize) this.inBacklog = true;
        await this.escalateAll(batch, report, lease);
        if (batch.length < batchSize) return;
      }
    } finally {
      this.inBacklog = false;
    }
  }

  /** Each step caught on its own: a repair that keeps failing (its read included) stops neither the other nor the warnings. */
  private async onceForAllShards(lease: SweepLease, report: SweepReport): Promise<void> {
    const { batchSize } = this.settings;

    // 3a. repair: all-clears owed by false alarms whose request failed or crashed half-way
    try {
      for (const incident of await this.store.pendingAllClears(batchSize)) {
        try {
          await this.escalator.completeAllClear(incident);
          lease.moved();
          report.allClears = (report.allClears ?? 0) + 1;
        } catch (err) {
          this.metrics.loopErrors.inc({ loop: 'sweep' });
          this.log.error({ err, incident: incident.id }, 'all-clear repair failed; left pending for the next tick');
        }
      }
    } catch (err) {
      this.metrics.loopErrors.inc({ loop: 'sweep' });
      this.log.error({ err }, 'reading pending all-clears failed; the next tick retries');
    }
    lease.moved();

    // 3b. repair: duress SOS owed and panic SOS texts left pending by a request that died half-way
    const { panics } = this.settings;
    if (panics) {
      const failed = (err: unknown, about?: { incident?: string; timer?: string }) => {
        this.metrics.loopErrors.inc({ loop: 'sweep' });
        this.log.error({ err, ...about }, 'panic repair (owed duress SOS or panic texts) failed; left pending for the next tick');
      };
      try {
        const n = await panics.repair(batchSize, failed);
        if (n > 0) report.panicsRepaired = n;
      } catch (err) {
        failed(err);
      }
    }
    lease.moved();

    // 3c. the nudge before the SOS
    await this.warn(lease, report);
  }

  /** Warnings never stop the sweep: a failure is logged and counted, the SOS path goes on. */
  private async warn(lease: SweepLease, report: SweepReport): Promise<void> {
    const { warnings } = this.settings;
    if (!warnings || this.stopping || lease.signal?.aborted) return;
    try {
      const n = await warnings.run();
      if (n > 0) report.warned = n;
    } catch (err) {
      this.metrics.loopErrors.inc({ loop: 'sweep' });
      this.log.error({ err }, 'warning claim failed; the next tick retries');
    }
  }

  private async escalateAll(timers: Timer[], report: SweepReport, lease: SweepLease): Promise<void> {
    const size = Math.max(1, this.settings.groupSize ?? 50);
    const groups: Timer[][] = [];
    for (let i = 0; i < timers.length; i += size) groups.push(timers.slice(i, i + size));
    await mapLimit(groups, this.settings.concurrency, async (group) => {
      try {
        await this.escalator.escalateBatch(group, report.fence);
        lease.moved();
        report.escalated += group.length;
        for (const t of group) this.retries.settled(t.id);
      } catch (err) {
        lease.moved();
        if (isTransient(err)) {
          // the store is unavailable: one timer at a time would only ask it again, timer after
          // timer (each waiting its timeout); the group waits its backoff, still pending
          const waits = group.map((t) => this.waitAfter(t, report));
          this.log.warn(
            {
              err,
              timers: group.map((t) => t.id),
              failures: Math.max(...waits.map((w) => w.failures)),
              retryInMs: Math.max(...waits.map((w) => w.retryInMs)),
            },
            TRANSIENT_FAILURE,
          );
          return;
        }
        // every escalation of the group is still pending: one at a time, each failure is counted (and dead-lettered) alone
        this.log.warn({ err, timers: group.length }, 'group escalation failed; escalating its timers one at a time');
        await this.escalateEach(group, report, lease);
      }
    });
  }

  private async escalateEach(timers: Timer[], report: SweepReport, lease: SweepLease): Promise<void> {
    for (const t of timers) {
      try {
        await this.escalator.escalate(t, t.expiredByFence ?? report.fence);
        report.escalated++;
        this.retries.settled(t.id);
      } catch (err) {
        if (isTransient(err)) this.log.warn({ err, timer: t.id, ...this.waitAfter(t, report) }, TRANSIENT_FAILURE);
        else {
          report.failed++;
          this.metrics.escalationErrors.inc({ kind: 'counted' });
          this.retries.settled(t.id);
          await this.countFailure(t, t.expiredByFence ?? report.fence, err);
        }
      }
      lease.moved();
      await nextTurn();
    }
  }

  /** A transient failure: not counted on the timer (it stays pending), tried again after its backoff (the caller logs it). */
  private waitAfter(t: Timer, report: SweepReport): { retryInMs: number; failures: number } {
    report.failed++;
    report.transient = (report.transient ?? 0) + 1;
    this.metrics.escalationErrors.inc({ kind: 'transient' });
    return this.retries.failed(t.id);
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
    transient: optional(sum((r) => r.transient)),
    waiting: optional(sum((r) => r.waiting)),
    allClears: optional(sum((r) => r.allClears)),
    warned: optional(sum((r) => r.warned)),
    panicsRepaired: optional(sum((r) => r.panicsRepaired)),
    stalled: reports.some((r) => r.stalled) || undefined,
    contendedShards: optional(reports.filter((r) => r.outcome === 'contended').length),
  };
  for (const [k, v] of Object.entries(extras)) if (v !== undefined) Object.assign(report, { [k]: v });
  return report;
}
