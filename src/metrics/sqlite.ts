/** The SQLite store's write gate: how this process's writes got the file's write lock. */
import client from 'prom-client';
import type { WriteGateStats } from '../store/port-write-gate.js';
import { labelledCounter } from './labelled.js';

export function sqliteMetrics(r: client.Registry[]) {
  let gate: (() => WriteGateStats) | undefined;
  // the gate's counts are cumulative; each scrape adds what is new since the last one
  let seen: Partial<Record<'free' | 'waited' | 'timed_out', number>> = {};
  let waitSeen = 0;
  let commitsSeen = 0;
  const m = {
    sqliteWrites: labelledCounter({
      name: 'vigil_sqlite_writes_total',
      help: "SQLite writes of this process by how they got the file's write lock: free, waited (another process held it), timed_out (store_busy)",
      labels: { lock: ['free', 'waited', 'timed_out'] },
      registers: r,
      collect() {
        const now = gate?.();
        if (!now) return;
        for (const [lock, v] of [
          ['free', now.immediate],
          ['waited', now.waited],
          ['timed_out', now.timedOut],
        ] as const)
          this.inc({ lock }, Math.max(0, v - (seen[lock] ?? 0)));
        seen = { free: now.immediate, waited: now.waited, timed_out: now.timedOut };
      },
    }),
    sqliteWriteWait: new client.Counter({
      name: 'vigil_sqlite_write_wait_seconds_total',
      help: "Time this process's SQLite writes spent waiting for another process's write lock",
      registers: r,
      collect() {
        const now = gate?.();
        if (!now) return;
        this.inc(Math.max(0, now.waitedMs / 1000 - waitSeen));
        waitSeen = now.waitedMs / 1000;
      },
    }),
    sqliteGroupCommits: new client.Counter({
      name: 'vigil_sqlite_group_commits_total',
      help: "Commits of this process's SQLite writes that waited for another process's lock: the writes that waited together share one commit (waited writes / commits = writes per commit)",
      registers: r,
      collect() {
        const now = gate?.();
        if (!now) return;
        this.inc(Math.max(0, now.groupCommits - commitsSeen));
        commitsSeen = now.groupCommits;
      },
    }),
    /** The SQLite store's write-gate counts, read at each scrape (not called on MongoDB). */
    watchSqliteWrites(read: () => WriteGateStats) {
      gate = read;
      for (const lock of m.sqliteWrites.allowedLabelValues.lock) m.sqliteWrites.inc({ lock }, 0);
    },
  };
  return m;
}
