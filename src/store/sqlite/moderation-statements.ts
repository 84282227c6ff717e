/**
 * SQL of moderator actions and retention (./moderation.ts), by name; prepared once with every
 * other statement (./statements.ts). Bound values only; timers and incidents stamp `updated_at`
 * with `store_now()`.
 */

// closed and old enough: resolved or false alarm before @before, with no all-clear still owed
const INCIDENT_EXPIRED = `i.status IN ('resolved','false_alarm') AND i.resolved_at < @before AND (i.all_clear IS NULL OR i.all_clear = 'done')`;

const AUDIT_FILTERS =
  '(@actor IS NULL OR actor = @actor) AND (@person IS NULL OR person = @person) AND (@incidentId IS NULL OR incident_id = @incidentId)';

/**
 * Newest first on (at, id), with `lead` (a column with an index on (lead, at, id)) equal to its
 * parameter, and the other filters (NULL: any) checked on the lines the index yields.
 */
function auditPages<N extends string>(name: N, lead: 'incident_id' | 'person' | 'actor' | null) {
  const param = { incident_id: '@incidentId', person: '@person', actor: '@actor' } as const;
  const where = lead ? `${lead} = ${param[lead]} AND ` : '';
  const newest = `SELECT * FROM audit WHERE ${where}${AUDIT_FILTERS} ORDER BY at DESC, id DESC LIMIT @limit`;
  const before = `SELECT * FROM audit WHERE ${where}(at < @at OR (at = @at AND id < @id)) AND ${AUDIT_FILTERS} ORDER BY at DESC, id DESC LIMIT @limit`;
  return { [`${name}Newest`]: newest, [`${name}Before`]: before } as { [K in `${N}Newest` | `${N}Before`]: string };
}

export const MODERATION_SQL = Object.freeze({
  // ── moderator actions ─────────────────────────────────────────────────────────
  // an SOS of a false alarm is never resent (the service refuses first; this keeps the CAS honest); the message
  // sent before becomes an earlier one, so its late receipts cannot move the new attempt (SET reads the old row)
  deliveryResend: `UPDATE deliveries SET status = 'pending', attempts = 0, next_attempt_at = @now, lease_until = NULL,
      resends = resends + 1, updated_at = @now, provider_message_id = NULL,
      earlier_message_ids = CASE WHEN provider_message_id IS NULL THEN earlier_message_ids
        ELSE json_insert(COALESCE(earlier_message_ids, '[]'), '$[#]', provider_message_id) END
    WHERE key = @key AND status IN ('dead','failed') AND redacted_at IS NULL
      AND NOT (kind = 'sos' AND EXISTS (SELECT 1 FROM incidents AS i WHERE i.id = deliveries.incident_id AND i.status = 'false_alarm'))
    RETURNING *`,
  // pending only: a claimed (sending) delivery is with the dispatcher and is not cancelled
  deliveriesCancelPending: `UPDATE deliveries SET status = 'superseded', last_error = 'cancelled_by_moderator', lease_until = NULL, updated_at = @now
    WHERE incident_id = @incidentId AND status = 'pending' RETURNING *`,
  auditInsert: `INSERT INTO audit (id, at, actor, action, target, incident_id, person, reason)
    VALUES (@id, @at, @actor, @action, @target, @incidentId, @person, @reason)
    ON CONFLICT (id) DO NOTHING`,
  // the audit by each leading filter (its own index, migration 025); the other filters are checked on the way
  ...auditPages('auditAll', null),
  ...auditPages('auditByIncident', 'incident_id'),
  ...auditPages('auditByPerson', 'person'),
  ...auditPages('auditByActor', 'actor'),
  noteInsert: `INSERT INTO incident_notes (id, incident_id, author, text, created_at) VALUES (@id, @incidentId, @author, @text, @now)
    ON CONFLICT (id) DO NOTHING RETURNING *`,
  noteById: 'SELECT * FROM incident_notes WHERE id = ?',
  // a note is a change of the incident: clients following `since` see it
  incidentTouch: 'UPDATE incidents SET updated_at = store_now() WHERE id = ?',
  // ?: JSON array of incident ids
  notesOfIncidents: 'SELECT * FROM incident_notes WHERE incident_id IN (SELECT value FROM json_each(?)) ORDER BY created_at, id',

  // ── retention ─────────────────────────────────────────────────────────────────
  // the trail of an anonymised timer (closed, its incident closed) is deleted with it
  retentionFixes: `DELETE FROM location_fixes WHERE rowid IN (
    SELECT f.rowid FROM location_fixes AS f JOIN timers AS t ON t.id = f.timer_id WHERE t.redacted_at IS NOT NULL LIMIT @limit)`,
  // the inbox: an entry recorded before the cut-off is deleted (index notifications_created, migration 026)
  retentionNotifications: `DELETE FROM notifications WHERE id IN (
    SELECT id FROM notifications WHERE created_at < @before ORDER BY created_at LIMIT @limit)`,
  // closed timers, and dead letters (escalation failed) that nobody retried before the cut-off
  retentionTimers: `UPDATE timers SET location_name = NULL, lat = NULL, lng = NULL, display_name = NULL, meeting = NULL, redacted_at = @now, updated_at = store_now()
    WHERE id IN (
        SELECT t.id FROM timers AS t
        WHERE t.redacted_at IS NULL AND t.status IN ('safe','cancelled','expired') AND t.resolved_at < @before AND t.escalation IN ('none','done','failed')
          AND NOT EXISTS (SELECT 1 FROM incidents AS i WHERE i.timer_id = t.id AND NOT (${INCIDENT_EXPIRED}))
        ORDER BY t.resolved_at LIMIT @limit)
    RETURNING id`,
  retentionIncidents: `UPDATE incidents SET location_name = NULL, lat = NULL, lng = NULL, display_name = NULL, meeting = NULL, contact_acks = NULL, redacted_at = @now, updated_at = store_now()
    WHERE id IN (
        SELECT i.id FROM incidents AS i WHERE i.redacted_at IS NULL AND ${INCIDENT_EXPIRED}
          -- it waits while a delivery of it is still on its way or not anonymised yet
          AND NOT EXISTS (SELECT 1 FROM deliveries AS d WHERE d.incident_id = i.id AND d.redacted_at IS NULL)
        ORDER BY i.resolved_at LIMIT @limit)
    RETURNING id`,
  // final deliveries only: one still pending or sending (a late all-clear) waits for its outcome
  retentionDeliveryCandidates: `SELECT d.key, d.phone FROM deliveries AS d JOIN incidents AS i ON i.id = d.incident_id
    WHERE d.redacted_at IS NULL AND d.status IN ('sent','delivered','failed','dead','superseded') AND ${INCIDENT_EXPIRED}
    LIMIT @limit`,
  retentionDelivery: `UPDATE deliveries SET phone = @masked, body = '', contact_name = '', redacted_at = @now, updated_at = @now
    WHERE key = @key AND redacted_at IS NULL AND status IN ('sent','delivered','failed','dead','superseded')`,
  retentionNotes: `UPDATE incident_notes SET text = '', redacted_at = @now
    WHERE id IN (
        SELECT n.id FROM incident_notes AS n JOIN incidents AS i ON i.id = n.incident_id
        WHERE n.redacted_at IS NULL AND ${INCIDENT_EXPIRED} LIMIT @limit)
    RETURNING id`,
});
