/**
 * SQL of the timers (./timers.ts), by name; prepared once with every other statement (./statements.ts).
 * Values are always bound. `('active','extended')` is the live status set. `updated_at` is
 * `store_now()`, the store's clock read while the statement runs, i.e. after the write lock is
 * taken: a writer that waited on another process's lock is not stamped with the time it
 * started waiting (list cursors rely on it).
 */

export const TIMERS_SQL = Object.freeze({
  idempotencyGet: 'SELECT fingerprint, timer_id FROM idempotency WHERE user_id = ? AND key = ?',
  idempotencyInsert: 'INSERT INTO idempotency (user_id, key, fingerprint, timer_id, created_at) VALUES (?, ?, ?, ?, ?)',
  timerById: 'SELECT * FROM timers WHERE id = ?',
  timerByIdAndUser: 'SELECT * FROM timers WHERE id = ? AND user_id = ?',
  liveTimerOfUser: "SELECT * FROM timers WHERE user_id = ? AND status IN ('active','extended')",
  timerInsert: `INSERT INTO timers (id, user_id, status, started_at, expires_at, updated_at, location_name, lat, lng, display_name, traceparent, meeting, sweep_slot, time_zone)
    VALUES (@id, @userId, 'active', @startedAt, @expiresAt, store_now(), @locationName, @lat, @lng, @displayName, @traceparent, @meeting, @slot, @timeZone) RETURNING *`,
  // one fixed statement per filter combination, so each keeps its index
  timersNewest: 'SELECT * FROM timers WHERE user_id = @userId ORDER BY started_at DESC, id DESC LIMIT @limit',
  timersNewestByStatus: 'SELECT * FROM timers WHERE user_id = @userId AND status = @status ORDER BY started_at DESC, id DESC LIMIT @limit',
  // keyset (updated_at, id) after (@since, @sinceId); a NULL @sinceId means strictly after @since
  timersSince: `SELECT * FROM timers WHERE user_id = @userId AND (updated_at > @since OR (updated_at = @since AND id > @sinceId))
    ORDER BY updated_at ASC, id ASC LIMIT @limit`,
  timersSinceByStatus: `SELECT * FROM timers WHERE user_id = @userId AND status = @status AND (updated_at > @since OR (updated_at = @since AND id > @sinceId))
    ORDER BY updated_at ASC, id ASC LIMIT @limit`,
  // an extension is a new deadline: it may warn again (warned_at cleared)
  timerExtend: `UPDATE timers SET expires_at = expires_at + @ms, status = 'extended', extensions = extensions + 1, updated_at = store_now(), warned_at = NULL
    WHERE id = @id AND user_id = @userId AND status IN ('active','extended') AND expires_at > @now
      AND extensions < @maxExtensions AND (expires_at + @ms - started_at) <= @maxTotalMs
    RETURNING *`,
  // @duress: 1 records the silent SOS a duress check-in owes, in the same write (NULL: a genuine one)
  timerResolve: `UPDATE timers SET status = @to, resolved_at = @now, updated_at = store_now(), duress_pending = @duress
    WHERE id = @id AND user_id = @userId AND status IN ('active','extended') RETURNING *`,
  // @due: now minus the grace after the deadline
  timersClaimDue: `UPDATE timers SET status = 'expired', escalation = 'pending', resolved_at = @now, updated_at = store_now(), expired_by_fence = @fence
    WHERE id IN (SELECT id FROM timers WHERE status IN ('active','extended') AND expires_at <= @due
        -- this sweep shard's timers only (src/domain/sweep-shard.ts); a residual filter on the due rows
        AND (@shards = 1 OR sweep_slot % @shards = @shard)
      ORDER BY expires_at LIMIT @limit)
      -- re-checked row by row; the unary + keeps the planner on the primary key (with the index, each claim walked every due timer)
      AND +status IN ('active','extended') AND +expires_at <= @due
    RETURNING *`,
  timersPendingEscalation:
    "SELECT * FROM timers WHERE escalation = 'pending' AND (@shards = 1 OR sweep_slot % @shards = @shard) ORDER BY expires_at LIMIT @limit",
  timerMarkEscalated:
    "UPDATE timers SET escalation = 'done', incident_id = ?, updated_at = store_now() WHERE id = ? AND escalation = 'pending'",
  timersDuressPending: 'SELECT * FROM timers WHERE duress_pending = 1 ORDER BY resolved_at LIMIT ?',
  timerDuressRaised: 'UPDATE timers SET duress_pending = NULL WHERE id = ? AND duress_pending = 1',
  timersPendingEscalationCount: "SELECT COUNT(*) AS n FROM timers WHERE escalation = 'pending'",
  // index-backed (timers_due, incidents by status): closed records are never counted
  timersLiveByStatus: "SELECT status, COUNT(*) AS n FROM timers WHERE status IN ('active','extended') GROUP BY status",
  // index incidents_status (status, created_at): MIN reads one entry
  incidentOldestUnacknowledged: "SELECT MIN(created_at) AS oldest FROM incidents WHERE status = 'active'",
  incidentsOpenByStatus: "SELECT status, COUNT(*) AS n FROM incidents WHERE status IN ('active','acknowledged') GROUP BY status",
  maxRecordedFence: `SELECT MAX(COALESCE((SELECT MAX(fence) FROM incidents), 0),
    COALESCE((SELECT MAX(expired_by_fence) FROM timers WHERE escalation = 'pending'), 0)) AS f`,
  // the count and the dead letter move together: `escalation_attempts + 1` is the new count
  timerEscalationFailed: `UPDATE timers SET escalation_attempts = escalation_attempts + 1, escalation_error = @error, updated_at = store_now(),
      escalation = CASE WHEN escalation_attempts + 1 >= @max THEN 'failed' ELSE 'pending' END
    WHERE id = @id AND escalation = 'pending' RETURNING *`,
  timersEscalationFailed: "SELECT * FROM timers WHERE escalation = 'failed' ORDER BY expires_at LIMIT ?",
  timerEscalationRetry:
    "UPDATE timers SET escalation = 'pending', escalation_attempts = 0, updated_at = store_now() WHERE id = ? AND escalation = 'failed' AND redacted_at IS NULL RETURNING *",
  // @due: now minus the grace after the deadline (a timer in its grace is not overdue)
  timersOverdue: "SELECT COUNT(*) AS n, MIN(expires_at) AS oldest FROM timers WHERE status IN ('active','extended') AND expires_at <= @due",
});
