/**
 * SQL of the deliveries (./deliveries.ts), by name; prepared once with every other statement
 * (./statements.ts). A variable set of values is bound as one JSON array and read back with `json_each`.
 */

export const DELIVERIES_SQL = Object.freeze({
  // @status: 'pending', or 'superseded' for a text a cap held back (@lastError says why)
  deliveryInsert: `INSERT INTO deliveries (key, incident_id, user_id, contact_id, contact_name, phone, kind, body, status, attempts, next_attempt_at, created_at, updated_at, traceparent, last_error)
    VALUES (@key, @incidentId, @userId, @contactId, @contactName, @phone, @kind, @body, @status, 0, @now, @now, @now, @traceparent, @lastError)
    ON CONFLICT DO NOTHING`,
  deliveriesOfIncident: 'SELECT * FROM deliveries WHERE incident_id = ? ORDER BY created_at, key',
  // ?: JSON array of incident ids
  deliveriesOfIncidents: 'SELECT * FROM deliveries WHERE incident_id IN (SELECT value FROM json_each(?)) ORDER BY created_at, key',
  deliveryByKey: 'SELECT * FROM deliveries WHERE key = ?',
  // a follow-up (all-clear, moved) waits while the same contact's SOS is pending or sending, and an all-clear while their moved
  // follow-up is (UNIQUE (incident_id, contact_id, kind) serves the lookup); a lapsed lease (sending → sending) marks the lost attempt as possibly accepted
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
                SELECT 1 FROM deliveries AS s WHERE s.incident_id = d.incident_id AND s.contact_id = d.contact_id
                  AND (s.kind = 'sos' OR (d.kind = 'all_clear' AND s.kind = 'moved')) AND s.status IN ('pending','sending')))
            ORDER BY d.next_attempt_at LIMIT @limit)
          UNION ALL
          SELECT key, next_attempt_at AS due FROM (
            SELECT d.key, d.next_attempt_at FROM deliveries AS d
            WHERE d.status = 'sending' AND d.lease_until <= @now
              AND (d.kind = 'sos' OR NOT EXISTS (
                SELECT 1 FROM deliveries AS s WHERE s.incident_id = d.incident_id AND s.contact_id = d.contact_id
                  AND (s.kind = 'sos' OR (d.kind = 'all_clear' AND s.kind = 'moved')) AND s.status IN ('pending','sending')))
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
  // the alarming texts not sent yet (the SOS and its moved follow-up) once the SOS is over
  deliveriesSupersedeSos: `UPDATE deliveries SET status = 'superseded', updated_at = @now
    WHERE incident_id = @incidentId AND kind IN ('sos','moved') AND status = 'pending' RETURNING *`,
  // no carrier call was made: the attempt the claim counted is given back
  deliverySupersedeClaimed: `UPDATE deliveries SET status = 'superseded', attempts = attempts - 1, lease_until = NULL, last_error = @reason, updated_at = @now
    WHERE key = @key AND status = 'sending' AND attempts = @attempt RETURNING *`,
  // nothing was sent: the claim goes back to pending with its attempt given back (last_error says how the last real one ended)
  deliveryReleaseClaim: `UPDATE deliveries SET status = 'pending', attempts = attempts - 1, lease_until = NULL,
      next_attempt_at = @due, updated_at = @now
    WHERE key = @key AND status = 'sending' AND attempts = @attempt RETURNING *`,
  // ── receipts: one moves only the delivery whose current message it is about (a resend clears it)
  // @from: JSON array of the allowed current statuses
  deliveryApplyReceipt: `UPDATE deliveries SET status = @to, updated_at = @now
    WHERE provider_message_id = @pid AND status IN (SELECT value FROM json_each(@from)) RETURNING *`,
  deliveryByMessage: 'SELECT key FROM deliveries WHERE provider_message_id = ?',
  // a receipt no attempt has recorded yet; a repeat keeps the furthest status (@from: what @to may replace)
  earlyReceiptKeep: `INSERT INTO early_receipts (message_id, status, received_at) VALUES (@pid, @to, @now)
    ON CONFLICT (message_id) DO UPDATE SET status = excluded.status, received_at = excluded.received_at
      WHERE early_receipts.status IN (SELECT value FROM json_each(@from))`,
  earlyReceiptOf: 'SELECT status FROM early_receipts WHERE message_id = @pid AND received_at > @before',
  earlyReceiptDrop: 'DELETE FROM early_receipts WHERE message_id = ?',
  // bounded: each receipt kept removes at most @limit expired ones (SQLite has no TTL)
  earlyReceiptsExpire: `DELETE FROM early_receipts WHERE message_id IN (
    SELECT message_id FROM early_receipts WHERE received_at <= @before ORDER BY received_at LIMIT @limit)`,
  // texts that went or will go to a carrier: one superseded before any attempt (never sent) does not count
  deliveriesCountSince:
    "SELECT COUNT(*) AS n FROM deliveries WHERE user_id = ? AND created_at > ? AND (status <> 'superseded' OR attempts > 0)",
  deliveriesOpen: "SELECT COUNT(*) AS n, MIN(next_attempt_at) AS oldest FROM deliveries WHERE status IN ('pending','sending')",
  deliveriesDead: "SELECT COUNT(*) AS n FROM deliveries WHERE status = 'dead'",
});
