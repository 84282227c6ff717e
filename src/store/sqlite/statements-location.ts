/** The SQL of the location trail (table `location_fixes`, migration 006); values always bound. */
import type Database from 'better-sqlite3';

export const LOCATION_SQL = Object.freeze({
  fixInsert: `INSERT INTO location_fixes (timer_id, user_id, at, lat, lng, accuracy_m, stored_at)
    VALUES (@timerId, @userId, @at, @lat, @lng, @accuracyM, @now) ON CONFLICT (timer_id, at) DO NOTHING`,
  // the latest @limit, returned oldest first
  fixesOfTimer: `SELECT * FROM (SELECT * FROM location_fixes WHERE timer_id = @timerId ORDER BY at DESC LIMIT @limit) ORDER BY at ASC`,
  lastFixOfTimer: 'SELECT * FROM location_fixes WHERE timer_id = ? ORDER BY at DESC LIMIT 1',
});

export type LocationStatements = { readonly [K in keyof typeof LOCATION_SQL]: Database.Statement };

export function prepareLocation(db: Database.Database): LocationStatements {
  const out = {} as Record<keyof typeof LOCATION_SQL, Database.Statement>;
  for (const name of Object.keys(LOCATION_SQL) as (keyof typeof LOCATION_SQL)[]) out[name] = db.prepare(LOCATION_SQL[name]);
  return Object.freeze(out);
}
