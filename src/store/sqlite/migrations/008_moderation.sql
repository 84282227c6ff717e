-- Version 8: moderator actions on texts (resend, cancel, notes), their audit, and retention.
-- Columns are only added (never a table rebuild): a cancelled delivery is `superseded` with
-- last_error 'cancelled_by_moderator', so the status CHECK of version 2 stays as it is.

ALTER TABLE deliveries ADD COLUMN resends INTEGER NOT NULL DEFAULT 0;
ALTER TABLE deliveries ADD COLUMN redacted_at INTEGER;
ALTER TABLE timers ADD COLUMN redacted_at INTEGER;
ALTER TABLE incidents ADD COLUMN redacted_at INTEGER;

CREATE TABLE incident_notes (
  id          TEXT PRIMARY KEY,
  incident_id TEXT NOT NULL REFERENCES incidents(id),
  author      TEXT NOT NULL,
  text        TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  redacted_at INTEGER
);
CREATE INDEX incident_notes_incident ON incident_notes (incident_id, created_at);

-- one line per moderator action and record; the id is derived from the fact (writing it twice keeps one)
CREATE TABLE audit (
  id          TEXT PRIMARY KEY,
  at          INTEGER NOT NULL,
  actor       TEXT NOT NULL,
  action      TEXT NOT NULL CHECK (action IN ('delivery.resend','delivery.cancel','incident.note')),
  target      TEXT NOT NULL,
  incident_id TEXT NOT NULL
);
CREATE INDEX audit_newest ON audit (at, id);

-- retention: closed records not anonymised yet, oldest close first
CREATE INDEX timers_retention ON timers (resolved_at) WHERE redacted_at IS NULL AND status IN ('safe','cancelled','expired');
CREATE INDEX incidents_retention ON incidents (resolved_at) WHERE status IN ('resolved','false_alarm');
CREATE INDEX deliveries_retention ON deliveries (incident_id) WHERE redacted_at IS NULL;
CREATE INDEX incident_notes_retention ON incident_notes (incident_id) WHERE redacted_at IS NULL;
