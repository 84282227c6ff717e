/**
 * The ticks of a replica: sweep (under the lock) and dispatch (leases). The node-cron tick
 * is the heartbeat; with `wake` settings the scheduler also wakes when the next live timer
 * becomes due: its deadline plus the grace (read from the store after every sweep, never
 * further ahead than the lock lease, and moved earlier when this replica arms or extends a
 * timer with `deadlineAt`). Waking at the bare deadline would find nothing to claim for the
 * whole grace, and retry every few ms while keeping the lease.
 * A wake-up is an ordinary sweep: it tries the lock, so in a cluster only the holder sweeps.
 * Sweeps never overlap: a tick or wake-up during a sweep is dropped (the sweep claims until
 * nothing is due, then plans the next wake-up). When the sweeper keeps its lease between
 * sweeps, the scheduler gives it back once the next deadline is further than `keepLeaseMs`
 * away, and at `stop()`. Ticks never throw; `stop()` stops the ticks
 * and the wake-up and waits for the running sweep, the dispatch tick and the sends in flight.
 * Safe to call twice. node-cron's `destroy()` does not wait for a running task, so we do.
 * A daily retention job runs on its own cron expression, under its own lock.
 */
import cron, { type ScheduledTask } from 'node-cron';
import type { Logger } from 'pino';
import type { LoopName, Metrics } from '../metrics.js';
import type { Store } from '../store/port.js';
import type { Dispatcher } from './dispatcher.js';
import type { Sweeper, SweepReport } from './sweeper.js';
import type { RetentionJob } from './retention.js';
import { WakeUp } from './wake-up.js';

export interface WakeSettings {
  store: Pick<Store, 'now' | 'nextDeadline'>;
  /** the furthest ahead a wake-up is set (the sweep lock's TTL): then the next deadline is read again */
  maxAheadMs: number;
  /** the sweeper's `keepLeaseMs`: its lease is kept after a sweep only when the next timer is due at most this far away */
  keepLeaseMs?: number;
  /** the wait after a deadline before its timer is claimed (GRACE_SECONDS, the sweeper's `graceMs`; ms, default 0) */
  graceMs?: number;
}

/** After an empty sweep, a deadline that is already past waits this long (no hot loop on a clock edge). */
const RETRY_FLOOR_MS = 20;
/** The same when the past deadline is in a shard another replica holds (SWEEP_SHARDS > 1): it is being swept. */
const CONTENDED_RETRY_MS = 100;

export class Scheduler {
  private tasks: ScheduledTask[] = [];
  private running: Promise<void> | undefined;
  private retaining: Promise<unknown> = Promise.resolve();
  private stopping: Promise<void> | undefined;
  private readonly wake: WakeUp | undefined;
  /** wake-ups only once the ticks run (a test or script that sweeps by hand never calls start()) */
  private started = false;

  constructor(
    private readonly sweeper: Sweeper,
    private readonly dispatcher: Dispatcher,
    private readonly metrics: Metrics,
    private readonly log: Logger,
    private readonly expression: string,
    private readonly wakeSettings?: WakeSettings,
    /** the daily retention job and its own cron expression; none when absent */
    private readonly retention?: { job: RetentionJob; cron: string },
  ) {
    this.wake = wakeSettings ? new WakeUp(() => void this.sweepNow('wake'), wakeSettings.maxAheadMs) : undefined;
  }

  start(): void {
    if (this.stopping || this.started) return;
    this.started = true;
    this.tasks = [
      cron.schedule(this.expression, () => void this.sweepNow('sweep'), { noOverlap: true, name: 'vigil-sweep' }),
      cron.schedule(this.expression, () => this.guard('dispatch', () => this.dispatcher.tick()), {
        noOverlap: true,
        name: 'vigil-dispatch',
      }),
    ];
    const retention = this.retention;
    if (retention)
      this.tasks.push(
        cron.schedule(retention.cron, () => this.guard('retention', () => (this.retaining = retention.job.run())), {
          noOverlap: true,
          name: 'vigil-retention',
        }),
      );
    // a fresh process sweeps at once (crash repair, deadlines passed while it was down), then follows the deadlines
    this.wake?.atMost(0);
  }

  /** A timer armed or extended on this replica: wake no later than it is due (its deadline plus the grace). */
  deadlineAt(at: Date): void {
    const { wake, wakeSettings } = this;
    if (!wake || !wakeSettings || !this.started || this.stopping) return;
    void this.guard('wake', async () => {
      const now = await wakeSettings.store.now();
      wake.atMost(at.getTime() + (wakeSettings.graceMs ?? 0) - now.getTime());
    });
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.sweeper.stopClaiming();
      this.wake?.stop();
      for (const t of this.tasks) await t.destroy();
      this.tasks = [];
      await this.running?.catch(() => undefined);
      // the lease kept for the next sweep: back now, so another replica sweeps without waiting for its TTL
      await this.sweeper.releaseKept();
      await this.retaining.catch(() => undefined);
      await this.dispatcher.stop();
    })();
    return this.stopping;
  }

  /** One sweep unless one is running (then this trigger is dropped: the running sweep plans the next wake-up). */
  private sweepNow(loop: 'sweep' | 'wake'): Promise<void> {
    if (this.running || this.stopping) return Promise.resolve();
    this.running = this.guard(loop, async () => {
      const report = await this.sweeper.sweep({ throttled: true });
      // texts for a fresh SOS go out now, not on the next dispatch tick
      if (report.escalated > 0) await this.dispatcher.tick();
      await this.planWake(report);
    }).finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /** After a sweep that held the lock (or ran without it): wake when the next timer is due (deadline + grace), within the lease. */
  private async planWake(report: SweepReport): Promise<void> {
    const { wake, wakeSettings } = this;
    if (!wake || !wakeSettings) return;
    // contended: the holder plans; failed: the cron tick retries; stopped: nothing more
    if (report.outcome !== 'swept' && report.outcome !== 'swept_without_lock') return;
    const [next, now] = await Promise.all([wakeSettings.store.nextDeadline(), wakeSettings.store.now()]);
    // a timer in its grace is not due yet: the claim would find nothing before deadline + grace
    const delay = next ? next.getTime() + (wakeSettings.graceMs ?? 0) - now.getTime() : Number.POSITIVE_INFINITY;
    // the lease kept for the next sweep only while that sweep is near (Sweeper keepLeaseMs):
    // otherwise the lock is free for whichever replica's wake-up or tick comes first
    if (!(delay <= (wakeSettings.keepLeaseMs ?? 0))) await this.sweeper.releaseKept();
    if (!next) return wake.atMost(wakeSettings.maxAheadMs);
    // nothing due in the shards it swept, and a timer already due: that one is in a shard
    // another replica is sweeping; look at this replica's shards again a little later, not every 20 ms
    const floor = (report.contendedShards ?? 0) > 0 ? CONTENDED_RETRY_MS : RETRY_FLOOR_MS;
    wake.atMost(report.claimed === 0 ? Math.max(delay, floor) : delay);
  }

  private async guard(loop: LoopName, fn: () => Promise<unknown>): Promise<void> {
    try {
      await fn();
    } catch (err) {
      this.metrics.loopErrors.inc({ loop });
      this.log.error({ err, loop }, 'background tick failed; carrying on');
    }
  }
}
