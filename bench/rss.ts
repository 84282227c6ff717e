/**
 * Memory: /proc/<pid>/status (VmHWM is the peak resident set since the process started),
 * and the "1,000,000 armed timers" fixture written straight into the SQLite file before
 * the service starts (one transaction, one prepared statement, the columns of the migrations).
 */
import { readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { sweepSlot } from '../src/domain/sweep-shard.js';

export function procMemory(pid: number): { hwmKb: number; rssKb: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
    return { hwmKb: kb('VmHWM'), rssKb: kb('VmRSS') };
  } catch {
    return undefined; // exited, or not Linux
  }
}

/** CPU time (user + system) a process has used so far, ms: /proc/<pid>/stat fields 14 and 15, in clock ticks. */
export function procCpuMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // the command name (field 2) may hold spaces: count fields after its closing parenthesis
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? ticks * (1000 / CLOCK_TICKS_PER_SECOND) : undefined;
  } catch {
    return undefined;
  }
}
// USER_HZ: 100 on every Linux this runs on (getconf CLK_TCK)
const CLOCK_TICKS_PER_SECOND = 100;

/** Insert `n` active timers due a day from now, one per user, into a migrated Vigil SQLite file. */
export function insertArmedTimers(file: string, n: number): void {
  const db = new Database(file);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    const now = Date.now();
    const insert = db.prepare(
      `INSERT INTO timers (id, user_id, status, started_at, expires_at, updated_at, location_name, display_name, extensions, escalation, sweep_slot)
       VALUES (?, ?, 'active', ?, ?, ?, 'Bench café', 'Bench', 0, 'none', ?)`,
    );
    db.transaction(() => {
      for (let i = 0; i < n; i++)
        insert.run(`rss-${i}`, `rss-user-${i}`, now, now + 86_400_000 + (i % 3_600_000), now, sweepSlot(`rss-${i}`));
    })();
  } finally {
    db.close();
  }
}
