/**
 * SQL of the incidents (./incidents.ts), by name; prepared once with every other statement
 * (./statements.ts). A variable set of values is bound as one JSON array and read back with
 * `json_each`; `updated_at` is `store_now()` (stamped once the write lock is held).
 */

export const INCIDENTS_SQL = Object.freeze({
  // run only once incidentOpenOfUser found no open incident of the person, in the same write (one open SOS per person)
  incidentInsert: `INSERT INTO incidents (id, timer_id, user_id, status, deadline, created_at, updated_at, location_name, lat, lng, display_name, fence, meeting)
    VALUES (@id, @timerId, @userId, 'active', @deadline, @now, store_now(), @locationName, @lat, @lng, @displayName, @fence, @meeting)
    ON CONFLICT (timer_id) DO NOTHING RETURNING *`,
  // index incidents_user_open; the newest if history left more than one open
  incidentOpenOfUser: `SELECT * FROM incidents WHERE user_id = ? AND status IN ('active','acknowledged')
    ORDER BY created_at DESC, id DESC LIMIT 1`,
  // a timer joins an open incident: listed once (its own timer_id is never listed)
  incidentLinkTimer: `UPDATE incidents SET linked_timers = json_insert(COALESCE(linked_timers, '[]'), '$[#]', @timerId), updated_at = store_now()
    WHERE id = @id AND timer_id <> @timerId
      AND NOT EXISTS (SELECT 1 FROM json_each(COALESCE(incidents.linked_timers, '[]')) WHERE value = @timerId)
    RETURNING *`,
  // append a source unless it is there already (NULL sources mean ["timer"])
  incidentAddSource: `UPDATE incidents SET sources = json_insert(COALESCE(sources, '["timer"]'), '$[#]', @source), updated_at = store_now()
    WHERE id = @id AND NOT EXISTS (SELECT 1 FROM json_each(COALESCE(incidents.sources, '["timer"]')) WHERE value = @source)
    RETURNING *`,
  // @note: JSON {text, at}; at most @max notes are kept
  incidentAddPanicNote: `UPDATE incidents SET panic_notes = json_insert(COALESCE(panic_notes, '[]'), '$[#]', json(@note)), updated_at = store_now()
    WHERE id = @id AND json_array_length(COALESCE(panic_notes, '[]')) < @max RETURNING *`,
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
  // a resolve whose closing texts are owed, in one write (the incident is their outbox, as for the all-clear)
  incidentResolveClosing: `UPDATE incidents SET status = 'resolved', all_clear = 'pending', updated_at = store_now(), resolved_at = @now, resolved_by = @by
    WHERE id = @id AND status IN (SELECT value FROM json_each(@from)) RETURNING *`,
  // "I'm safe" after a resolve that told nobody: the all-clear is owed now
  incidentOweAllClear: `UPDATE incidents SET all_clear = 'pending', updated_at = store_now()
    WHERE id = @id AND status = 'resolved' AND all_clear IS NULL RETURNING *`,
  // the false alarm and the all-clear it owes, in one write
  incidentFalseAlarm: `UPDATE incidents SET status = 'false_alarm', all_clear = 'pending', updated_at = store_now(), resolved_at = @now, resolved_by = @by
    WHERE id = @id AND status IN (SELECT value FROM json_each(@from)) RETURNING *`,
  incidentsAllClearPending: "SELECT * FROM incidents WHERE all_clear = 'pending' ORDER BY updated_at LIMIT ?",
  incidentAllClearDone: "UPDATE incidents SET all_clear = 'done', updated_at = store_now() WHERE id = ? AND all_clear = 'pending'",
});
