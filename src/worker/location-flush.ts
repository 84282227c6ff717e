/**
 * Each replica stores the fixes it received every LOCATION_FLUSH_SECONDS (fixes also go to
 * the store when a timer ends, and at once while an incident is open). Never throws out of
 * its timer; `stop()` waits for a running flush, flushes once more and is safe to call twice.
 */
import type { Logger } from 'pino';

export class LocationFlusher {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;

  constructor(
    private readonly location: { flushAll(): Promise<number> },
    private readonly everyMs: number,
    private readonly log: Pick<Logger, 'warn'>,
  ) {}

  start(): void {
    if (this.timer || this.stopping) return;
    this.timer = setInterval(() => void this.tick(), this.everyMs);
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      clearInterval(this.timer);
      this.timer = undefined;
      await this.running;
      await this.tick(true);
    })();
    return this.stopping;
  }

  private tick(final = false): Promise<void> {
    if (this.running && !final) return this.running;
    const run = this.location
      .flushAll()
      .then(() => undefined)
      .catch((err: unknown) => this.log.warn({ err }, 'location flush failed; retried on the next tick'))
      .finally(() => {
        if (this.running === run) this.running = undefined;
      });
    this.running = run;
    return run;
  }
}
