/** SQL of the location trail (./location.ts; table `location_fixes`, migration 006), by name; prepared once with every other statement (./statements.ts). */

export const LOCATION_SQL = Object.freeze({
  fixInsert: `INSERT INTO location_fixes (timer_id, user_id, at, lat, lng, accuracy_m, stored_at)
    VALUES (@timerId, @userId, @at, @lat, @lng, @accuracyM, @now) ON CONFLICT (timer_id, at) DO NOTHING`,
  // the latest @limit, returned oldest first
  fixesOfTimer: `SELECT * FROM (SELECT * FROM location_fixes WHERE timer_id = @timerId ORDER BY at DESC LIMIT @limit) ORDER BY at ASC`,
  lastFixOfTimer: 'SELECT * FROM location_fixes WHERE timer_id = ? ORDER BY at DESC LIMIT 1',
});
