/**
 * What the SQLite store's write gate (./sqlite/write-gate.ts) counted since the store opened,
 * read by the metrics at each scrape. Cumulative: the reader turns them into counter increments.
 */
export interface WriteGateStats {
  /** writes that found the lock free */
  immediate: number;
  /** writes that had to wait for another process */
  waited: number;
  /** writes that gave up after `waitMs` */
  timedOut: number;
  /** how long the writes that waited waited, in all (ms) */
  waitedMs: number;
  /** commits of writes that waited (several of them share one) */
  groupCommits: number;
}
