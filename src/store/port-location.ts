/**
 * The store's part of live location: the trail of flushed fixes (the store is the truth;
 * the latest fix in the cache is only a copy). Kept per timer with the time each was
 * stored, so a retention job can delete them by age or by timer.
 */
import type { StoredFix } from '../domain/location.js';

export interface LocationStore {
  /** Store the fixes not stored yet (unique per timer and fix time: a repeated flush adds nothing); returns how many were new. */
  addFixes(fixes: StoredFix[]): Promise<number>;
  /** A timer's stored fixes, oldest first, at most `limit` (the latest ones when there are more). */
  listFixes(timerId: string, limit: number): Promise<StoredFix[]>;
  /** The timer's latest stored fix (by fix time), or null. */
  lastFix(timerId: string): Promise<StoredFix | null>;
}
