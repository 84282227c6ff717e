/**
 * The cluster tests' view of the shared SQLite file: bulk seeding of due timers (one
 * transaction, so thousands come due at the same instant) and read-only tallies that
 * decide "exactly once". Reading the file directly, rather than through a replica,
 * means the verdict does not depend on the code under test.
 */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { sweepSlot } from '../../src/domain/sweep-shard.js';

export const dbFile = (dataDir: string) => join(dataDir, 'vigil.db');

export interface SeedOptions {
  /** how many timers (one user each) */
  count: number;
  /** deadline of every timer, ms since the epoch */
  expiresAt: number | ((i: number) => number);
  /** contacts of user i (default: 1 + i % 2, i.e. one or two) */
  contacts?: (i: number) => number;
  /** user ids are `<prefix><i>` (default `seed-`) */
  prefix?: string;
}

/**
 * Insert `count` live timers, each of its own user with its contacts, in one IMMEDIATE
 * transaction. The replicas must have created the schema (start the cluster first).
 */
export function seedTimers(dataDir: string, o: SeedOptions): { timerIds: string[]; contacts: number } {
  const db = new Database(dbFile(dataDir), { fileMustExist: true });
  try {
    db.pragma('busy_timeout = 10000');
    const insTimer = db.prepare(
      `INSERT INTO timers (id, user_id, status, started_at, expires_at, updated_at, display_name, sweep_slot)
       VALUES (?, ?, 'active', ?, ?, ?, ?, ?)`,
    );
    const insContact = db.prepare('INSERT INTO contacts (user_id, position, id, name, phone) VALUES (?, ?, ?, ?, ?)');
    const prefix = o.prefix ?? 'seed-';
    const timerIds: string[] = [];
    let contacts = 0;
    db.transaction(() => {
      const now = Date.now();
      for (let i = 0; i < o.count; i++) {
        const userId = `${prefix}${i}`;
        const id = `tmr_${prefix}${i}`;
        const expiresAt = typeof o.expiresAt === 'function' ? o.expiresAt(i) : o.expiresAt;
        insTimer.run(id, userId, Math.min(now, expiresAt - 1000), expiresAt, now, `Person ${i}`, sweepSlot(id));
        const n = o.contacts ? o.contacts(i) : 1 + (i % 2);
        for (let c = 0; c < n; c++) {
          insContact.run(userId, c, `c_${prefix}${i}_${c}`, `Contact ${c}`, `+1415${String(i).padStart(6, '0')}${c}`);
          contacts++;
        }
        timerIds.push(id);
      }
    }).immediate();
    return { timerIds, contacts };
  } finally {
    db.close();
  }
}

export interface Tally {
  timers: number;
  /** timers still active/extended */
  live: number;
  expired: number;
  /** expired timers whose escalation is still pending */
  pending: number;
  /** expired timers whose escalation is done */
  done: number;
  incidents: number;
  /** distinct timers among incidents (equal to `incidents` by the unique index) */
  incidentTimers: number;
  /** contacts of the owners of expired timers: the SOS deliveries there must be */
  expectedDeliveries: number;
  /** SOS deliveries */
  deliveries: number;
  /** distinct (incident, contact) among SOS deliveries */
  deliveryPairs: number;
  sent: number;
  /** deliveries that point at a contact the owner does not have, or at another user's incident */
  strayDeliveries: number;
  /** incidents whose fence differs from the fence that expired their timer */
  fenceMismatches: number;
  /** latest incident creation and latest escalation mark, ms since the epoch */
  lastIncidentAt: number;
  lastEscalatedAt: number;
}

/** Counts that decide exactly-once, read through a read-only connection. */
export function tally(dataDir: string): Tally {
  const db = new Database(dbFile(dataDir), { readonly: true, fileMustExist: true });
  try {
    db.pragma('busy_timeout = 10000');
    const one = (sql: string): number => Number((db.prepare(sql).get() as { n: number | null }).n ?? 0);
    return {
      timers: one('SELECT COUNT(*) AS n FROM timers'),
      live: one("SELECT COUNT(*) AS n FROM timers WHERE status IN ('active','extended')"),
      expired: one("SELECT COUNT(*) AS n FROM timers WHERE status = 'expired'"),
      pending: one("SELECT COUNT(*) AS n FROM timers WHERE escalation = 'pending'"),
      done: one("SELECT COUNT(*) AS n FROM timers WHERE status = 'expired' AND escalation = 'done'"),
      incidents: one('SELECT COUNT(*) AS n FROM incidents'),
      incidentTimers: one('SELECT COUNT(DISTINCT timer_id) AS n FROM incidents'),
      expectedDeliveries: one("SELECT COUNT(*) AS n FROM timers t JOIN contacts c ON c.user_id = t.user_id WHERE t.status = 'expired'"),
      deliveries: one("SELECT COUNT(*) AS n FROM deliveries WHERE kind = 'sos'"),
      deliveryPairs: one("SELECT COUNT(*) AS n FROM (SELECT DISTINCT incident_id, contact_id FROM deliveries WHERE kind = 'sos')"),
      sent: one("SELECT COUNT(*) AS n FROM deliveries WHERE kind = 'sos' AND status = 'sent'"),
      strayDeliveries: one(
        `SELECT COUNT(*) AS n FROM deliveries d JOIN incidents i ON i.id = d.incident_id
         WHERE d.user_id <> i.user_id OR NOT EXISTS (SELECT 1 FROM contacts c WHERE c.user_id = i.user_id AND c.id = d.contact_id)`,
      ),
      fenceMismatches: one('SELECT COUNT(*) AS n FROM incidents i JOIN timers t ON t.id = i.timer_id WHERE i.fence <> t.expired_by_fence'),
      lastIncidentAt: one('SELECT MAX(created_at) AS n FROM incidents'),
      lastEscalatedAt: one("SELECT MAX(updated_at) AS n FROM timers WHERE escalation = 'done'"),
    };
  } finally {
    db.close();
  }
}

/** Rows of one query, read-only (for the fence and per-timer checks of a scenario). */
export function query<T>(dataDir: string, sql: string, ...params: unknown[]): T[] {
  const db = new Database(dbFile(dataDir), { readonly: true, fileMustExist: true });
  try {
    db.pragma('busy_timeout = 10000');
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

/**
 * Whether the store's write lock can be taken within `waitMs` (BEGIN IMMEDIATE, then
 * rolled back at once). False means some process holds it — e.g. a replica frozen by
 * SIGSTOP in the middle of a write, which would freeze every writer sharing the file.
 */
export function writeLockFree(dataDir: string, waitMs: number): boolean {
  const db = new Database(dbFile(dataDir), { fileMustExist: true });
  try {
    db.pragma(`busy_timeout = ${waitMs}`);
    db.exec('BEGIN IMMEDIATE');
    db.exec('ROLLBACK');
    return true;
  } catch (err) {
    if (err instanceof Error && 'code' in err && String(err.code).startsWith('SQLITE_BUSY')) return false;
    throw err;
  } finally {
    db.close();
  }
}
