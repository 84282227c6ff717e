/**
 * Is the sweep behind? Read from the store, so every replica sees it, whichever one holds
 * the sweep lock: the oldest live deadline is more than `behindMs` in the past (with
 * wake-ups a deadline is normally claimed within milliseconds). While it is, the
 * dispatcher claims no new texts, so a burst's incidents are written first; on a shared
 * SQLite file the other replicas' claims and outcome writes would otherwise queue with the
 * sweep for the one write lock (the dispatcher bounds how long it holds back). The answer
 * is cached for `refreshMs`, and a failed read counts as "not behind".
 */
import type { Store } from '../store/port.js';

export interface BacklogSettings {
  /** a live deadline this far in the past means the sweep is behind (ms); add the grace period */
  behindMs: number;
  /** how often the store is asked (ms) */
  refreshMs: number;
}

export class SweepBacklog {
  private overdueMs = 0;
  private readAt = Number.NEGATIVE_INFINITY;
  private reading: Promise<void> | undefined;

  constructor(
    private readonly store: Pick<Store, 'now' | 'nextDeadline'>,
    private readonly settings: BacklogSettings,
    private readonly clock: () => number = () => performance.now(),
  ) {}

  /**
   * The sweep is behind, as read at most `refreshMs` ago; an older answer is read again
   * first (callers share one read). Never throws. A cached answer from before a quiet
   * spell would be stale exactly when a burst begins: the first claim after it would
   * go ahead of the burst's escalations.
   */
  async behind(): Promise<boolean> {
    if (this.clock() - this.readAt >= this.settings.refreshMs) await (this.reading ??= this.read());
    return this.overdueMs > this.settings.behindMs;
  }

  private read(): Promise<void> {
    return Promise.all([this.store.nextDeadline(), this.store.now()])
      .then(([next, storeNow]) => {
        this.overdueMs = next ? storeNow.getTime() - next.getTime() : 0;
      })
      .catch(() => {
        this.overdueMs = 0;
      })
      .finally(() => {
        this.readAt = this.clock();
        this.reading = undefined;
      });
  }
}
