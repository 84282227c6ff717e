/**
 * What the harness reads back: incidents from the SQLite file (opened read-only beside the
 * running service), the carrier's acceptances, and the event-loop delay from /metrics.
 *
 * Commit time of an incident: `updated_at`, written with store_now() by the insert and not
 * touched again while the incident stays `active` (nothing acknowledges or resolves in a
 * run); `created_at` otherwise.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';

export interface IncidentTimes {
  userId: string;
  deadline: number;
  committed: number;
}

export class StoreReader {
  private readonly db: Database.Database;

  constructor(file: string) {
    this.db = new Database(file, { readonly: true, fileMustExist: true });
  }

  /** incidents of users whose id starts with `prefix` */
  count(prefix: string): number {
    const row = this.db.prepare('SELECT COUNT(*) AS n FROM incidents WHERE user_id LIKE ?').get(`${prefix}%`) as { n: number };
    return row.n;
  }

  incidents(prefix: string): IncidentTimes[] {
    const rows = this.db
      .prepare('SELECT user_id, deadline, created_at, updated_at, status FROM incidents WHERE user_id LIKE ?')
      .all(`${prefix}%`) as { user_id: string; deadline: number; created_at: number; updated_at: number; status: string }[];
    return rows.map((r) => ({ userId: r.user_id, deadline: r.deadline, committed: r.status === 'active' ? r.updated_at : r.created_at }));
  }

  /** timer status counts of users whose id starts with `prefix` */
  timerStatuses(prefix: string): Record<string, number> {
    const rows = this.db.prepare('SELECT status, COUNT(*) AS n FROM timers WHERE user_id LIKE ? GROUP BY status').all(`${prefix}%`) as {
      status: string;
      n: number;
    }[];
    return Object.fromEntries(rows.map((r) => [r.status, r.n]));
  }

  close(): void {
    this.db.close();
  }
}

/** Poll `done` every `everyMs` until it is true or `deadline` (epoch ms) passes; answers whether it became true. */
export async function waitUntil(done: () => boolean, deadline: number, everyMs = 250): Promise<boolean> {
  for (;;) {
    if (done()) return true;
    if (Date.now() > deadline) return false;
    await sleep(everyMs);
  }
}

/**
 * Event-loop delay p99 from a Prometheus text, ms: `vigil_event_loop_delay_seconds` (a summary
 * gauge with stat="p99", or `…_p99_seconds`) when the service exports it, else
 * prom-client's `vigil_nodejs_eventloop_lag_p99_seconds` (reset at every scrape, so it covers
 * the time since the previous one).
 */
export function eventLoopP99Ms(text: string): number | undefined {
  const patterns = [
    /^vigil_event_loop_delay_seconds\{[^}]*stat="p99"[^}]*\}\s+([0-9.eE+-]+)/m,
    /^vigil_event_loop_delay_p99_seconds(?:\{[^}]*\})?\s+([0-9.eE+-]+)/m,
    /^vigil_nodejs_eventloop_lag_p99_seconds(?:\{[^}]*\})?\s+([0-9.eE+-]+)/m,
  ];
  for (const p of patterns) {
    const m = p.exec(text);
    const v = m?.[1] === undefined ? NaN : Number(m[1]);
    if (Number.isFinite(v)) return v * 1000;
  }
  return undefined;
}

/** Scrapes every `everyMs` until stopped; the highest p99 seen after the first (discarded) scrape. */
export class EventLoopSampler {
  private max: number | undefined;
  private stopped = false;
  private readonly loop: Promise<void>;

  constructor(scrape: () => Promise<number | undefined>, everyMs = 2000) {
    this.loop = (async () => {
      await scrape(); // resets the window: arming is not part of the measurement
      while (!this.stopped) {
        await sleep(everyMs);
        const v = await scrape();
        if (v !== undefined) this.max = Math.max(this.max ?? 0, v);
      }
    })();
  }

  /** Safe to call twice. */
  async stop(): Promise<number | undefined> {
    this.stopped = true;
    await this.loop;
    return this.max;
  }
}
