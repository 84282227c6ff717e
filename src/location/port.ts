/**
 * The latest-fix cache port: the freshest kept fix of each timer, shared by every replica
 * (Redis in cluster mode, this process's memory when embedded). Only a copy: the store's
 * trail is the truth (invariant 1), so losing the cache loses at most the fixes not flushed yet.
 * Adapters: ./redis-fixes.ts, ./memory-fixes.ts.
 */
import type { StoredFix } from '../domain/location.js';

export interface LatestFixes {
  /** The latest kept fix of a timer, or null (none, or its time to live ran out). Rejects when the cache cannot be reached. */
  get(timerId: string): Promise<StoredFix | null>;
  /** `get` of many timers in one round trip (a sweep's group): the timers that have one. Rejects when the cache cannot be reached. */
  getMany(timerIds: string[]): Promise<Map<string, StoredFix>>;
  /** Make `fix` the timer's latest, for the cache's time to live. Rejects when the cache cannot be reached. */
  set(fix: StoredFix): Promise<void>;
  /** Release the connection; safe to call twice. */
  close(): Promise<void>;
}
