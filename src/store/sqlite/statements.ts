/**
 * Every SQL statement of the SQLite store, by name; prepared once when the store opens.
 * Values are always bound parameters: a variable set of values is bound as one JSON
 * array and read back with `json_each`. `('active','extended')` is the live status set.
 * `updated_at` of timers and incidents is `store_now()`, the store's clock read while the
 * statement runs, i.e. after the write lock is taken: a writer that waited on another
 * process's lock is not stamped with the time it started waiting (list cursors rely on it).
 */
import type Database from 'better-sqlite3';

export const SQL = Object.freeze({
  ping: 'SELECT 1 AS ok',

  // ── timers ──────────────────────────────────────────────────────────────────
  idempotencyGet: 'SELECT fingerprint, timer_id FROM idempotency WHERE user_id = ? AND key = ?',
  idempotencyInsert: 'INSERT INTO idempotency (user_id, key, fingerprint, timer_id, created_at) VALUES (?, ?, ?, ?, ?)',
  timerById: 'SELECT * FROM timers WHERE id = ?',
  timerByIdAndUser: 'SELECT * FROM timers WHERE id = ? AND user_id = ?',
  liveTimerOfUser: "SELECT * FROM timers WHERE user_id = ? AND status IN ('active','extended')",
  timerInsert: `INSERT INTO timers (id, user_id, status, started_at, expires_at, updated_at, location_name, lat, lng, display_name, traceparent, meeting, sweep_slot)
    VALUES (@id, @userId, 'active', @startedAt, @expiresAt, store_now(), @locationName, @lat, @lng, @displayName, @traceparent, @meeting, @slot) RETURNING *`,
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
  timerResolve: `UPDATE timers SET status = @to, resolved_at = @now, updated_at = store_now()
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
  timersPendingEscalationCount: "SELECT COUNT(*) AS n FROM timers WHERE escalation = 'pending'",
  // index-backed (timers_due, incidents by status): closed records are never counted
  timersLiveByStatus: "SELECT status, COUNT(*) AS n FROM timers WHERE status IN ('active','extended') GROUP BY status",
  incidentsOpenByStatus: "SELECT status, COUNT(*) AS n FROM incidents WHERE status IN ('active','acknowledged') GROUP BY status",
  maxRecordedFence: `SELECT MAX(COALESCE((SELECT MAX(fence) FROM incidents), 0),
    COALESCE((SELECT MAX(expired_by_fence) FROM timers WHERE escalation = 'pending'), 0)) AS f`,
  // the count and the dead letter move together: `escalation_attempts + 1` is the new count
  timerEscalationFailed: `UPDATE timers SET escalation_attempts = escalation_attempts + 1, escalation_error = @error, updated_at = store_now(),
      escalation = CASE WHEN escalation_attempts + 1 >= @max THEN 'failed' ELSE 'pending' END
    WHERE id = @id AND escalation = 'pending' RETURNING *`,
  timersEscalationFailed: "SELECT * FROM timers WHERE escalation = 'failed' ORDER BY expires_at LIMIT ?",
  timerEscalationRetry:
    "UPDATE timers SET escalation = 'pending', escalation_attempts = 0, updated_at = store_now() WHERE id = ? AND escalation = 'failed' RETURNING *",
  timersOverdue: "SELECT COUNT(*) AS n, MIN(expires_at) AS oldest FROM timers WHERE status IN ('active','extended') AND expires_at <= ?",

  // ── incidents ───────────────────────────────────────────────────────────────
  incidentInsert: `INSERT INTO incidents (id, timer_id, user_id, status, deadline, created_at, updated_at, location_name, lat, lng, display_name, fence, meeting)
    VALUES (@id, @timerId, @userId, 'active', @deadline, @now, store_now(), @locationName, @lat, @lng, @displayName, @fence, @meeting)
    ON CONFLICT (timer_id) DO NOTHING RETURNING *`,
  incidentById: 'SELECT * FROM incidents WHERE id = ?',
  incidentByTimer: 'SELECT * FROM incidents WHERE timer_id = ?',
  incidentsOldest: 'SELECT * FROM incidents ORDER BY created_at ASC, id ASC LIMIT @limit',
  incidentsOldestByStatus: 'SELECT * FROM incidents WHERE status = @status ORDER BY created_at ASC, id ASC LIMIT @limit',
  incidentsSince: `SELECT * FROM incidents WHERE (updated_at > @since OR (updated_at = @since AND id > @sinceId))
    ORDER BY updated_at ASC, id ASC LIMIT @limit`,
  incidentsSinceByStatus: `SELECT * FROM incidents WHERE status = @status AND (updated_at > @since OR (updated_at = @since AND id > @sinceId))
    ORDER BY updated_at ASC, id ASC LIMIT @limit`,
  // @from: JSON array of the allowed current statuses
  incidentAcknowledge: `UPDATE incidents SET status = @to, updated_at = store_now(), acknowledged_at = @now, acknowledged_by = @by
    WHERE id = @id AND status IN (SELECT value FROM json_each(@from)) RETURNING *`,
  incidentResolve: `UPDATE incidents SET status = @to, updated_at = store_now(), resolved_at = @now, resolved_by = @by
    WHERE id = @id AND status IN (SELECT value FROM json_each(@from)) RETURNING *`,
  // the false alarm and the all-clear it owes, in one write
  incidentFalseAlarm: `UPDATE incidents SET status = 'false_alarm', all_clear = 'pending', updated_at = store_now(), resolved_at = @now, resolved_by = @by
    WHERE id = @id AND status IN (SELECT value FROM json_each(@from)) RETURNING *`,
  incidentsAllClearPending: "SELECT * FROM incidents WHERE all_clear = 'pending' ORDER BY updated_at LIMIT ?",
  incidentAllClearDone: "UPDATE incidents SET all_clear = 'done', updated_at = store_now() WHERE id = ? AND all_clear = 'pending'",

  // ── deliveries ──────────────────────────────────────────────────────────────
  deliveryInsert: `INSERT INTO deliveries (key, incident_id, user_id, contact_id, contact_name, phone, kind, body, status, attempts, next_attempt_at, created_at, updated_at, traceparent)
    VALUES (@key, @incidentId, @userId, @contactId, @contactName, @phone, @kind, @body, 'pending', 0, @now, @now, @now, @traceparent)
    ON CONFLICT DO NOTHING`,
  deliveriesOfIncident: 'SELECT * FROM deliveries WHERE incident_id = ? ORDER BY created_at, key',
  // ?: JSON array of incident ids
  deliveriesOfIncidents: 'SELECT * FROM deliveries WHERE incident_id IN (SELECT value FROM json_each(?)) ORDER BY created_at, key',
  deliveryByKey: 'SELECT * FROM deliveries WHERE key = ?',
  // a follow-up (all-clear, moved) waits while the same contact's SOS is pending or sending (UNIQUE (incident_id, contact_id, kind) serves
  // the lookup); a lapsed lease (sending → sending) marks the lost attempt as possibly accepted
  // two index walks (due pending in next_attempt_at order, stopping after @limit; lapsed leases among the few
  // sending), merged and cut to @limit: never a sort of every due row, so a claim stays short however deep the backlog
  deliveriesClaim: `UPDATE deliveries SET status = 'sending', attempts = attempts + 1, lease_until = @now + @leaseMs, updated_at = @now,
      maybe_accepted = CASE WHEN status = 'sending' THEN 1 ELSE maybe_accepted END
    WHERE key IN (
        SELECT key FROM (
          SELECT key, next_attempt_at AS due FROM (
            SELECT d.key, d.next_attempt_at FROM deliveries AS d
            WHERE d.status = 'pending' AND d.next_attempt_at <= @now
              AND (d.kind = 'sos' OR NOT EXISTS (
                SELECT 1 FROM deliveries AS s WHERE s.incident_id = d.incident_id AND s.contact_id = d.contact_id AND s.kind = 'sos' AND s.status IN ('pending','sending')))
            ORDER BY d.next_attempt_at LIMIT @limit)
          UNION ALL
          SELECT key, next_attempt_at AS due FROM (
            SELECT d.key, d.next_attempt_at FROM deliveries AS d
            WHERE d.status = 'sending' AND d.lease_until <= @now
              AND (d.kind = 'sos' OR NOT EXISTS (
                SELECT 1 FROM deliveries AS s WHERE s.incident_id = d.incident_id AND s.contact_id = d.contact_id AND s.kind = 'sos' AND s.status IN ('pending','sending')))
            ORDER BY d.next_attempt_at LIMIT @limit))
        ORDER BY due LIMIT @limit)
      -- re-checked row by row; the unary + keeps the planner on the primary key (with the status index, every claim walked the whole due backlog: test/integration/sqlite-plans.test.ts)
      AND ((+status = 'pending' AND +next_attempt_at <= @now) OR (+status = 'sending' AND +lease_until <= @now))
    RETURNING *`,
  deliveryRecordAttempt: `UPDATE deliveries SET status = @status, carrier = @carrier,
      provider_message_id = COALESCE(@providerMessageId, provider_message_id), last_error = @error,
      next_attempt_at = COALESCE(@next, next_attempt_at), lease_until = NULL, updated_at = @now,
      maybe_accepted = MAX(maybe_accepted, @maybeAccepted)
    WHERE key = @key AND status = 'sending' AND attempts = @attempt RETURNING *`,
  deliveriesSupersedeSos: `UPDATE deliveries SET status = 'superseded', updated_at = @now
    WHERE incident_id = @incidentId AND kind = 'sos' AND status = 'pending' RETURNING *`,
  // no carrier call was made: the attempt the claim counted is given back
  deliverySupersedeClaimed: `UPDATE deliveries SET status = 'superseded', attempts = attempts - 1, lease_until = NULL, last_error = @reason, updated_at = @now
    WHERE key = @key AND status = 'sending' AND attempts = @attempt RETURNING *`,
  // @from: JSON array of the allowed current statuses
  deliveryApplyReceipt: `UPDATE deliveries SET status = @to, updated_at = @now
    WHERE provider_message_id = @pid AND status IN (SELECT value FROM json_each(@from)) RETURNING *`,
  deliveriesCountSince: 'SELECT COUNT(*) AS n FROM deliveries WHERE user_id = ? AND created_at > ?',
  deliveriesOpen: "SELECT COUNT(*) AS n, MIN(next_attempt_at) AS oldest FROM deliveries WHERE status IN ('pending','sending')",
  deliveriesDead: "SELECT COUNT(*) AS n FROM deliveries WHERE status = 'dead'",

  // ── contacts ────────────────────────────────────────────────────────────────
  contactsOfUser: 'SELECT id, name, phone FROM contacts WHERE user_id = ? ORDER BY position',
  contactsDelete: 'DELETE FROM contacts WHERE user_id = ?',
  contactInsert: 'INSERT INTO contacts (user_id, position, id, name, phone) VALUES (?, ?, ?, ?, ?)',
});

export type Statements = { readonly [K in keyof typeof SQL]: Database.Statement };

export function prepareAll(db: Database.Database): Statements {
  const out = {} as Record<keyof typeof SQL, Database.Statement>;
  for (const name of Object.keys(SQL) as (keyof typeof SQL)[]) out[name] = db.prepare(SQL[name]);
  return Object.freeze(out);
}
