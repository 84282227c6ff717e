-- Version 6: live location and whom the person is meeting.
-- location_fixes is the trail: the fixes flushed from the latest-fix cache, one row per
-- (timer, fix time), so a repeated flush stores nothing twice. `stored_at` is when the row
-- was written; retention deletes by it (or by the timer). The deliveries table is rebuilt
-- (SQLite cannot change a CHECK in place) to admit the `moved` follow-up text.

CREATE TABLE location_fixes (
  timer_id    TEXT NOT NULL,
  user_id     TEXT NOT NULL,
  at          INTEGER NOT NULL,
  lat         REAL NOT NULL,
  lng         REAL NOT NULL,
  accuracy_m  REAL,
  stored_at   INTEGER NOT NULL,
  PRIMARY KEY (timer_id, at)
);
CREATE INDEX location_fixes_stored ON location_fixes (stored_at);

-- JSON { withUserId?, name?, phone? }, copied to the incident when it opens
ALTER TABLE timers ADD COLUMN meeting TEXT;
ALTER TABLE incidents ADD COLUMN meeting TEXT;

CREATE TABLE deliveries_v6 (
  key                 TEXT PRIMARY KEY,
  incident_id         TEXT NOT NULL REFERENCES incidents(id),
  user_id             TEXT NOT NULL,
  contact_id          TEXT NOT NULL,
  contact_name        TEXT NOT NULL,
  phone               TEXT NOT NULL,
  kind                TEXT NOT NULL CHECK (kind IN ('sos','all_clear','moved')),
  body                TEXT NOT NULL,
  status              TEXT NOT NULL CHECK (status IN ('pending','sending','sent','delivered','failed','dead','superseded')),
  attempts            INTEGER NOT NULL DEFAULT 0,
  next_attempt_at     INTEGER NOT NULL,
  lease_until         INTEGER,
  carrier             TEXT,
  provider_message_id TEXT,
  last_error          TEXT,
  created_at          INTEGER NOT NULL,
  updated_at          INTEGER NOT NULL,
  maybe_accepted      INTEGER NOT NULL DEFAULT 0,
  traceparent         TEXT,
  UNIQUE (incident_id, contact_id, kind)
);
INSERT INTO deliveries_v6 (key, incident_id, user_id, contact_id, contact_name, phone, kind, body, status, attempts, next_attempt_at, lease_until, carrier, provider_message_id, last_error, created_at, updated_at, maybe_accepted, traceparent)
  SELECT key, incident_id, user_id, contact_id, contact_name, phone, kind, body, status, attempts, next_attempt_at, lease_until, carrier, provider_message_id, last_error, created_at, updated_at, maybe_accepted, traceparent FROM deliveries;
DROP TABLE deliveries;
ALTER TABLE deliveries_v6 RENAME TO deliveries;
CREATE INDEX deliveries_due ON deliveries (status, next_attempt_at);
CREATE INDEX deliveries_incident ON deliveries (incident_id);
CREATE INDEX deliveries_provider ON deliveries (provider_message_id);
CREATE INDEX deliveries_user_created ON deliveries (user_id, created_at);
