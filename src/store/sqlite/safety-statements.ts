/**
 * SQL of the safety features (./safety.ts: panic SOS, warnings, the inbox), by name; prepared once
 * with every other statement (./statements.ts). `updated_at` of timers and incidents is
 * `store_now()` (stamped once the write lock is held). The panic also reads the person's live
 * timer and an incident by id with the statements of ./timers-statements.ts and ./incidents-statements.ts.
 */

export const SAFETY_SQL = Object.freeze({
  // ── panic ─────────────────────────────────────────────────────────────────
  sosIdempotencyGet: 'SELECT fingerprint, incident_id FROM sos_idempotency WHERE user_id = ? AND key = ?',
  sosIdempotencyInsert: 'INSERT INTO sos_idempotency (user_id, key, fingerprint, incident_id, created_at) VALUES (?, ?, ?, ?, ?)',
  // a sweep expired it and has not opened its incident yet
  pendingTimerOfUser:
    "SELECT * FROM timers WHERE user_id = ? AND escalation = 'pending' AND incident_id IS NULL ORDER BY expires_at DESC LIMIT 1",
  // the panic ends the live timer as the sweep would: expired, its escalation pending (the panic request completes it)
  timerExpireByPanic: `UPDATE timers SET status = 'expired', escalation = 'pending', resolved_at = @now, updated_at = store_now(), expired_by_fence = 0
    WHERE id = @id AND status IN ('active','extended') RETURNING *`,
  // a live timer of a person whose incident is already open: ended and linked to it, nothing left to escalate
  timerLinkToIncident: `UPDATE timers SET status = 'expired', escalation = 'done', incident_id = @incidentId, resolved_at = @now, updated_at = store_now()
    WHERE id = @id AND status IN ('active','extended') RETURNING *`,
  panicIncidentInsert: `INSERT INTO incidents (id, timer_id, user_id, status, deadline, created_at, updated_at, location_name, lat, lng, display_name, fence, sources, panic_texts)
    VALUES (@id, @timerId, @userId, 'active', @now, @now, store_now(), @locationName, @lat, @lng, @displayName, 0, json_array(@source), @panicTexts)
    ON CONFLICT (timer_id) DO NOTHING RETURNING *`,

  incidentsPanicTextsPending: "SELECT * FROM incidents WHERE panic_texts = 'pending' ORDER BY created_at LIMIT ?",
  incidentPanicTexted: "UPDATE incidents SET panic_texts = 'done', updated_at = store_now() WHERE id = ? AND panic_texts = 'pending'",

  // ── warnings (domain/warning.ts: inWarningWindow) ─────────────────────────
  timersClaimWarning: `UPDATE timers SET warned_at = @now, updated_at = store_now()
    WHERE id IN (SELECT id FROM timers WHERE status IN ('active','extended') AND warned_at IS NULL
        AND expires_at <= @now + @beforeMs AND expires_at + @graceMs > @now AND expires_at - started_at > @beforeMs
        ORDER BY expires_at LIMIT @limit)
      -- re-checked row by row; the unary + keeps the planner on the primary key (test/integration/sqlite-plans.test.ts)
      AND +status IN ('active','extended') AND +warned_at IS NULL
    RETURNING *`,

  // ── inbox ─────────────────────────────────────────────────────────────────
  notificationInsert: `INSERT INTO notifications (id, user_id, key, kind, title, body, timer_id, incident_id, created_at)
    VALUES (@id, @userId, @key, @kind, @title, @body, @timerId, @incidentId, @now) ON CONFLICT (user_id, key) DO NOTHING RETURNING *`,
  notificationByKey: 'SELECT * FROM notifications WHERE user_id = ? AND key = ?',
  // keyset (created_at, id) strictly before (@before, @beforeId); a NULL @before means from the newest
  notificationsPage: `SELECT * FROM notifications WHERE user_id = @userId AND (@unread = 0 OR read_at IS NULL)
      AND (@before IS NULL OR created_at < @before OR (created_at = @before AND id < @beforeId))
    ORDER BY created_at DESC, id DESC LIMIT @limit`,
  notificationRead: 'UPDATE notifications SET read_at = COALESCE(read_at, @now) WHERE id = @id AND user_id = @userId RETURNING *',
  notificationsReadAll: 'UPDATE notifications SET read_at = @now WHERE user_id = @userId AND read_at IS NULL',
});
