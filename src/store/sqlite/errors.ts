/**
 * Classifies better-sqlite3 errors for the SQLite store: a database file another
 * process holds locked past the busy timeout, and a closed connection, are the store
 * being unavailable (503 + Retry-After), not a bug (500).
 */
import Database from 'better-sqlite3';
import { Unavailable } from '../../domain/errors.js';

/** SQLITE_BUSY / SQLITE_LOCKED and their extended codes (`SQLITE_BUSY_SNAPSHOT`, …). */
export function isBusy(err: unknown): boolean {
  return err instanceof Database.SqliteError && /^SQLITE_(BUSY|LOCKED)(_|$)/.test(err.code);
}

/** The connection was closed under the call (better-sqlite3 throws a TypeError, or SQLite reports misuse). */
export function isClosed(err: unknown): boolean {
  if (err instanceof TypeError) return /database connection is not open|database is closed/i.test(err.message);
  return err instanceof Database.SqliteError && /database is closed|connection is not open/i.test(err.message);
}

/** `err` as the store being unavailable when it is one (busy, locked, closed); otherwise `err` itself. */
export function unavailableOr(op: string, err: unknown): unknown {
  if (isBusy(err)) return Unavailable('store_busy', `${op}: the SQLite database is locked by another connection`, err);
  if (isClosed(err)) return Unavailable('store_closed', `${op}: the SQLite store is closed`, err);
  return err;
}
