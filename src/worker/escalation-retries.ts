/**
 * When an escalation that failed for a transient reason (the store busy, unreachable, out of
 * time, a write it did not confirm: domain/errors.ts isTransient) may be tried again. Such a
 * failure is not the escalation's fault: it does not count toward ESCALATION_MAX_ATTEMPTS (a
 * sick store must never dead-letter an SOS), it only waits, so that a sick store is not asked
 * again at every sweep. The wait grows per consecutive failure of the timer:
 * `ceiling = min(capMs, baseMs·2^(failures-1))`, a random wait in [ceiling/2, ceiling]
 * (half of it fixed, so the store gets a real pause; half jitter, so timers spread out).
 *
 * Kept in this replica's memory only: another replica (or a restart) tries at once, which is
 * what the escalation would have done anyway. Entries go when the escalation succeeds, fails
 * for a counted reason, or has not been seen for a while (its timer was escalated elsewhere).
 */
export interface TransientRetry {
  /** the first wait (ms) */
  baseMs: number;
  /** the longest wait (ms) */
  capMs: number;
}

/** Entries at most; past it the ones due longest ago are forgotten (they are retried at once, as without a backoff). */
const MAX_ENTRIES = 10_000;

export class EscalationRetries {
  private readonly waits = new Map<string, { failures: number; notBefore: number }>();

  constructor(
    private readonly policy: TransientRetry,
    /** monotonic milliseconds */
    private readonly now: () => number = () => performance.now(),
    private readonly random: () => number = Math.random,
  ) {}

  /** May this timer's escalation be tried now? */
  ready(timerId: string): boolean {
    const w = this.waits.get(timerId);
    return !w || w.notBefore <= this.now();
  }

  /** A transient failure: the wait before the next try (ms) and how many transient failures in a row. */
  failed(timerId: string): { retryInMs: number; failures: number } {
    const failures = (this.waits.get(timerId)?.failures ?? 0) + 1;
    const ceiling = Math.min(this.policy.capMs, this.policy.baseMs * 2 ** (failures - 1));
    const retryInMs = Math.floor(ceiling / 2 + (this.random() * ceiling) / 2);
    this.waits.delete(timerId); // re-inserted last: the map stays ordered by when each entry was touched
    this.waits.set(timerId, { failures, notBefore: this.now() + retryInMs });
    this.prune();
    return { retryInMs, failures };
  }

  /** Escalated, or failed for a reason that is counted: no more waiting for it. */
  settled(timerId: string): void {
    this.waits.delete(timerId);
  }

  /** Timers waiting (tests, logs). */
  size(): number {
    return this.waits.size;
  }

  /** Forget entries whose wait ended long ago (their timer was escalated by another replica, or by a moderator). */
  private prune(): void {
    const stale = this.now() - 4 * Math.max(this.policy.capMs, 1000);
    for (const [id, w] of this.waits) {
      if (this.waits.size <= MAX_ENTRIES && w.notBefore >= stale) break;
      this.waits.delete(id);
    }
  }
}
