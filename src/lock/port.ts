/**
 * The lock port. The lock makes sweeps efficient (one sweeper per tick), never
 * correct: the store's compare-and-swap is what keeps escalations exactly-once.
 * Adapters: ./in-process-lock.ts (embedded), ./redis-lock.ts (cluster).
 */
export interface Lease {
  /** random token proving ownership; release/extend act only when it still matches */
  readonly token: string;
  /**
   * strictly increasing per lock name across all holders (0 when no fence is available),
   * across lock-service restarts too: a lost counter continues above the store's highest recorded fence
   */
  readonly fence: number;
  /** Prolong the lease to `ttlMs` from now; false when it was lost (expired, taken over). */
  extend(ttlMs: number): Promise<boolean>;
  /** Give the lock up if still held by this token; safe to call twice. */
  release(): Promise<void>;
}

export interface Lock {
  /** Try once to take `name` for `ttlMs`; `null` when another holder has it. Throws when the lock service is unreachable. */
  acquire(name: string, ttlMs: number): Promise<Lease | null>;
  close(): Promise<void>;
}
