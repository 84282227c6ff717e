-- Version 2: the all-clear outbox, superseded deliveries, escalation dead letters.
-- SQLite cannot change a CHECK constraint in place: timers and deliveries are rebuilt
-- (copy, drop, rename) with every column of version 1, then the indexes are recreated.

ALTER TABLE incidents ADD COLUMN all_clear TEXT CHECK (all_clear IN ('pending','done'));
-- crash repair: false alarms whose all-clear did not finish
CREATE INDEX incidents_all_clear_pending ON incidents (all_clear, updated_at) WHERE all_clear = 'pending';

CREATE TABLE timers_v2 (
  id              TEXT PRIMARY KEY,
  user_id         TEXT NOT NULL,
  status          TEXT NOT NULL CHECK (status IN ('active','extended','safe','cancelled','expired')),
  started_at      INTEGER NOT NULL,
  expires_at      INTEGER NOT NULL,
  resolved_at     INTEGER,
  updated_at      INTEGER NOT NULL,
  location_name   TEXT,
  lat             REAL,
  lng             REAL,
  display_name    TEXT,
  extensions      INTEGER NOT NULL DEFAULT 0,
  escalation      TEXT NOT NULL DEFAULT 'none' CHECK (escalation IN ('none','pending','done','failed')),
  incident_id     TEXT,
  expired_by_fence INTEGER,
  escalation_attempts INTEGER NOT NULL DEFAULT 0,
  escalation_error    TEXT
);
INSERT INTO timers_v2 (id, user_id, status, started_at, expires_at, resolved_at, updated_at, location_name, lat, lng, display_name, extensions, escalation, incident_id, expired_by_fence)
  SELECT id, user_id, status, started_at, expires_at, resolved_at, updated_at, location_name, lat, lng, display_name, extensions, escalation, incident_id, expired_by_fence FROM timers;
DROP TABLE timers;
ALTER TABLE timers_v2 RENAME TO timers;
CREATE INDEX timers_due ON timers (status, expires_at);
CREATE UNIQUE INDEX timers_one_live ON timers (user_id) WHERE status IN ('active','extended');
CREATE INDEX timers_user ON timers (user_id, status);
CREATE INDEX timers_user_updated ON timers (user_id, updated_at);
CREATE INDEX timers_pending ON timers (escalation, expires_at) WHERE escalation = 'pending';
-- dead letters, for the admin list and the gauge
CREATE INDEX timers_escalation_failed ON timers (escalation, expires_at) WHERE escalation = 'failed';

CREATE TABLE deliveries_v2 (
  key                 TEXT PRIMARY KEY,
  incident_id         TEXT NOT NULL REFERENCES incidents(id),
  user_id             TEXT NOT NULL,
  contact_id          TEXT NOT NULL,
  contact_name        TEXT NOT NULL,
  phone               TEXT NOT NULL,
  kind                TEXT NOT NULL CHECK (kind IN ('sos','all_clear')),
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
  UNIQUE (incident_id, contact_id, kind)
);
INSERT INTO deliveries_v2 (key, incident_id, user_id, contact_id, contact_name, phone, kind, body, status, attempts, next_attempt_at, lease_until, carrier, provider_message_id, last_error, created_at, updated_at)
  SELECT key, incident_id, user_id, contact_id, contact_name, phone, kind, body, status, attempts, next_attempt_at, lease_until, carrier, provider_message_id, last_error, created_at, updated_at FROM deliveries;
DROP TABLE deliveries;
ALTER TABLE deliveries_v2 RENAME TO deliveries;
CREATE INDEX deliveries_due ON deliveries (status, next_attempt_at);
CREATE INDEX deliveries_incident ON deliveries (incident_id);
CREATE INDEX deliveries_provider ON deliveries (provider_message_id);
CREATE INDEX deliveries_user_created ON deliveries (user_id, created_at);
