/**
 * The node-cron ticks of a replica: sweep (under the lock), dispatch (leases) and the
 * daily retention job (under its own lock).
 * Ticks never throw; `stop()` stops the ticks and waits for the running sweep, the
 * running dispatch tick and the sends in flight. Safe to call twice. node-cron's
 * `destroy()` does not wait for a running task, so the workers' own stops do.
 */
import cron, { type ScheduledTask } from 'node-cron';
import type { Logger } from 'pino';
import type { Metrics } from '../metrics.js';
import type { Dispatcher } from './dispatcher.js';
import type { RetentionJob } from './retention.js';
import type { Sweeper } from './sweeper.js';

export class Scheduler {
  private tasks: ScheduledTask[] = [];
  private sweeping: Promise<unknown> = Promise.resolve();
  private retaining: Promise<unknown> = Promise.resolve();
  private stopping: Promise<void> | undefined;

  constructor(
    private readonly sweeper: Sweeper,
    private readonly dispatcher: Dispatcher,
    private readonly metrics: Metrics,
    private readonly log: Logger,
    private readonly expression: string,
    /** the daily retention job and its own cron expression; none when absent */
    private readonly retention?: { job: RetentionJob; cron: string },
  ) {}

  start(): void {
    const guard = (loop: string, fn: () => Promise<unknown>) => async () => {
      try {
        await fn();
      } catch (err) {
        this.metrics.loopErrors.inc({ loop });
        this.log.error({ err, loop }, 'background tick failed; carrying on');
      }
    };
    this.tasks = [
      cron.schedule(
        this.expression,
        guard('sweep', async () => {
          const sweep = this.sweeper.sweep();
          this.sweeping = sweep;
          // texts for a fresh SOS go out now, not on the next dispatch tick
          if ((await sweep).escalated > 0) await this.dispatcher.tick();
        }),
        { noOverlap: true, name: 'vigil-sweep' },
      ),
      cron.schedule(
        this.expression,
        guard('dispatch', () => this.dispatcher.tick()),
        { noOverlap: true, name: 'vigil-dispatch' },
      ),
    ];
    const retention = this.retention;
    if (retention)
      this.tasks.push(
        cron.schedule(
          retention.cron,
          guard('retention', () => (this.retaining = retention.job.run())),
          { noOverlap: true, name: 'vigil-retention' },
        ),
      );
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.sweeper.stopClaiming();
      for (const t of this.tasks) await t.destroy();
      this.tasks = [];
      await this.sweeping.catch(() => undefined);
      await this.retaining.catch(() => undefined);
      await this.dispatcher.stop();
    })();
    return this.stopping;
  }
}
