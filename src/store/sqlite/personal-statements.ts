/**
 * SQL of a person's own data (./personal.ts): the export and the erasure, by name; prepared
 * once with every other statement (./statements.ts). Bound values only.
 */
export const PERSONAL_SQL = Object.freeze({
  personTimers: 'SELECT * FROM timers WHERE user_id = ? ORDER BY started_at, id',
  // by the fixes' primary key (timer_id, at), through the person's timers
  personFixes: `SELECT f.* FROM timers AS t JOIN location_fixes AS f ON f.timer_id = t.id WHERE t.user_id = ? ORDER BY f.timer_id, f.at`,
  personContacts: 'SELECT * FROM contacts WHERE user_id = ? ORDER BY position',
  personNotifications: 'SELECT * FROM notifications WHERE user_id = ? ORDER BY created_at, id',
  personIncidents: 'SELECT * FROM incidents WHERE user_id = ? ORDER BY created_at, id',
  personIdempotencyCount: `SELECT (SELECT COUNT(*) FROM idempotency WHERE user_id = @userId)
    + (SELECT COUNT(*) FROM sos_idempotency WHERE user_id = @userId) AS n`,
  personLiveTimer: "SELECT id FROM timers WHERE user_id = ? AND status IN ('active','extended') LIMIT 1",

  eraseFixes: 'DELETE FROM location_fixes WHERE timer_id IN (SELECT id FROM timers WHERE user_id = ?)',
  eraseTimers: 'DELETE FROM timers WHERE user_id = ?',
  eraseContacts: 'DELETE FROM contacts WHERE user_id = ?',
  eraseContactSettings: 'DELETE FROM contact_settings WHERE user_id = ?',
  eraseDuressPin: 'DELETE FROM duress_pins WHERE user_id = ?',
  personDuressPinSet: 'SELECT count(*) AS n FROM duress_pins WHERE user_id = ?',
  eraseNotifications: 'DELETE FROM notifications WHERE user_id = ?',
  eraseIdempotency: 'DELETE FROM idempotency WHERE user_id = ?',
  eraseSosIdempotency: 'DELETE FROM sos_idempotency WHERE user_id = ?',
  // kept for review under the pseudonym; the display name goes now (retention takes the rest on its schedule)
  pseudonymiseIncidents:
    'UPDATE incidents SET user_id = @pseudonym, display_name = NULL, contact_acks = NULL, updated_at = store_now() WHERE user_id = @userId',
  pseudonymiseDeliveries: 'UPDATE deliveries SET user_id = @pseudonym WHERE user_id = @userId',
  // a revocation line names the person in its id (domain/moderation.ts auditId.revoke) and target
  pseudonymiseAuditIds: `UPDATE audit SET id = 'revoke:' || @pseudonym || substr(id, length('revoke:' || @userId) + 1)
    WHERE target = @userId AND action = 'user.revoke_tokens' AND id LIKE 'revoke:%'`,
  pseudonymiseAuditTargets: 'UPDATE audit SET target = @pseudonym WHERE target = @userId',
  pseudonymiseAuditPersons: 'UPDATE audit SET person = @pseudonym WHERE person = @userId',
});
