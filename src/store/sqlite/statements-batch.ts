/**
 * The group-commit statements of the SQLite store (../port-batch.ts), prepared once when the
 * store opens; the single-row statements they run inside one transaction are in ./statements.ts.
 */
import type Database from 'better-sqlite3';

export const BATCH_SQL = Object.freeze({
  // ?: JSON array of timer ids
  incidentsOfTimers: 'SELECT * FROM incidents WHERE timer_id IN (SELECT value FROM json_each(?))',
  // ?: JSON array of user ids
  contactsOfUsers:
    'SELECT user_id, id, name, phone FROM contacts WHERE user_id IN (SELECT value FROM json_each(?)) ORDER BY user_id, position',
  // the (user_id, created_at) index serves each person's count
  deliveriesCountSinceByUser: `SELECT user_id, COUNT(*) AS n FROM deliveries
    WHERE user_id IN (SELECT value FROM json_each(@users)) AND created_at > @since GROUP BY user_id`,
  // one MIN per live status, each answered from the end of the timers_due index (status, expires_at)
  nextDeadline: `SELECT MIN(t) AS t FROM (
      SELECT MIN(expires_at) AS t FROM timers WHERE status = 'active'
      UNION ALL SELECT MIN(expires_at) AS t FROM timers WHERE status = 'extended')`,
});

export type BatchStatements = { readonly [K in keyof typeof BATCH_SQL]: Database.Statement };

export function prepareBatch(db: Database.Database): BatchStatements {
  const out = {} as Record<keyof typeof BATCH_SQL, Database.Statement>;
  for (const name of Object.keys(BATCH_SQL) as (keyof typeof BATCH_SQL)[]) out[name] = db.prepare(BATCH_SQL[name]);
  return Object.freeze(out);
}
