/**
 * The group-commit statements of the SQLite store (./batch.ts, ../port-batch.ts), by name; prepared
 * once with every other statement (./statements.ts). The single-row writes a batch runs inside one
 * transaction are those of ./incidents.ts, ./deliveries.ts and ./timers.ts.
 */

export const BATCH_SQL = Object.freeze({
  // ?: JSON array of timer ids
  incidentsOfTimers: 'SELECT * FROM incidents WHERE timer_id IN (SELECT value FROM json_each(?))',
  // ?: JSON array of user ids
  contactsOfUsers:
    'SELECT user_id, id, name, phone, language, state FROM contacts WHERE user_id IN (SELECT value FROM json_each(?)) ORDER BY user_id, position',
  // ?: JSON array of user ids
  contactSettingsOfUsers: 'SELECT user_id, language, time_zone FROM contact_settings WHERE user_id IN (SELECT value FROM json_each(?))',
  // the (user_id, created_at) index serves each person's count
  deliveriesCountSinceByUser: `SELECT user_id, COUNT(*) AS n FROM deliveries
    WHERE user_id IN (SELECT value FROM json_each(@users)) AND created_at > @since AND (status <> 'superseded' OR attempts > 0) GROUP BY user_id`,
  // one MIN per live status, each answered from the end of the timers_due index (status, expires_at)
  nextDeadline: `SELECT MIN(t) AS t FROM (
      SELECT MIN(expires_at) AS t FROM timers WHERE status = 'active'
      UNION ALL SELECT MIN(expires_at) AS t FROM timers WHERE status = 'extended')`,
});
