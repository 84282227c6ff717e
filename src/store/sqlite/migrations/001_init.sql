-- Vigil schema, version 1. Times are integer milliseconds since the epoch (UTC).

CREATE TABLE timers (
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
  escalation      TEXT NOT NULL DEFAULT 'none' CHECK (escalation IN ('none','pending','done')),
  incident_id     TEXT,
  expired_by_fence INTEGER
);
-- the sweep: equality on status, range on expires_at
CREATE INDEX timers_due ON timers (status, expires_at);
-- one live timer per person
CREATE UNIQUE INDEX timers_one_live ON timers (user_id) WHERE status IN ('active','extended');
CREATE INDEX timers_user ON timers (user_id, status);
CREATE INDEX timers_user_updated ON timers (user_id, updated_at);
-- crash repair: expired timers whose escalation did not finish
CREATE INDEX timers_pending ON timers (escalation, expires_at) WHERE escalation = 'pending';

CREATE TABLE idempotency (
  user_id     TEXT NOT NULL,
  key         TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  timer_id    TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  PRIMARY KEY (user_id, key)
);

CREATE TABLE incidents (
  id              TEXT PRIMARY KEY,
  timer_id        TEXT NOT NULL UNIQUE,
  user_id         TEXT NOT NULL,
  status          TEXT NOT NULL CHECK (status IN ('active','acknowledged','resolved','false_alarm')),
  deadline        INTEGER NOT NULL,
  created_at      INTEGER NOT NULL,
  updated_at      INTEGER NOT NULL,
  acknowledged_at INTEGER,
  acknowledged_by TEXT,
  resolved_at     INTEGER,
  resolved_by     TEXT,
  location_name   TEXT,
  lat             REAL,
  lng             REAL,
  display_name    TEXT,
  fence           INTEGER NOT NULL
);
CREATE INDEX incidents_status ON incidents (status, created_at);
CREATE INDEX incidents_updated ON incidents (updated_at);

CREATE TABLE deliveries (
  key                 TEXT PRIMARY KEY,
  incident_id         TEXT NOT NULL REFERENCES incidents(id),
  user_id             TEXT NOT NULL,
  contact_id          TEXT NOT NULL,
  contact_name        TEXT NOT NULL,
  phone               TEXT NOT NULL,
  kind                TEXT NOT NULL CHECK (kind IN ('sos','all_clear')),
  body                TEXT NOT NULL,
  status              TEXT NOT NULL CHECK (status IN ('pending','sending','sent','delivered','failed','dead')),
  attempts            INTEGER NOT NULL DEFAULT 0,
  next_attempt_at     INTEGER NOT NULL,
  lease_until         INTEGER,
  carrier             TEXT,
  provider_message_id TEXT,
  last_error          TEXT,
  created_at          INTEGER NOT NULL,
  updated_at          INTEGER NOT NULL,
  UNIQUE (incident_id, contact_id, kind)
);
CREATE INDEX deliveries_due ON deliveries (status, next_attempt_at);
CREATE INDEX deliveries_incident ON deliveries (incident_id);
CREATE INDEX deliveries_provider ON deliveries (provider_message_id);
CREATE INDEX deliveries_user_created ON deliveries (user_id, created_at);

CREATE TABLE contacts (
  user_id  TEXT NOT NULL,
  position INTEGER NOT NULL,
  id       TEXT NOT NULL,
  name     TEXT NOT NULL,
  phone    TEXT NOT NULL,
  PRIMARY KEY (user_id, position)
);
