-- Panic SOS, the warning before a deadline, the person's notification inbox.

-- JSON array of what raised the incident ('timer', 'panic'), first the one that opened it; NULL: a timer alone
ALTER TABLE incidents ADD COLUMN sources TEXT;
-- a panic incident of its own is its texts' outbox: 'pending' until the SOS deliveries exist, repaired by the sweep
ALTER TABLE incidents ADD COLUMN panic_texts TEXT CHECK (panic_texts IN ('pending','done'));
CREATE INDEX incidents_panic_texts_pending ON incidents (panic_texts, created_at) WHERE panic_texts = 'pending';
CREATE INDEX incidents_user_open ON incidents (user_id) WHERE status IN ('active','acknowledged');

-- when the person was warned that the deadline is near; an extension clears it
ALTER TABLE timers ADD COLUMN warned_at INTEGER;
CREATE INDEX timers_warn ON timers (expires_at) WHERE status IN ('active','extended') AND warned_at IS NULL;

-- Idempotency-Keys of panic requests, per person (the timers' keys live in `idempotency`)
CREATE TABLE sos_idempotency (
  user_id     TEXT NOT NULL,
  key         TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  incident_id TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  PRIMARY KEY (user_id, key)
);

CREATE TABLE notifications (
  id          TEXT PRIMARY KEY,
  user_id     TEXT NOT NULL,
  key         TEXT NOT NULL,
  kind        TEXT NOT NULL,
  title       TEXT NOT NULL,
  body        TEXT NOT NULL,
  timer_id    TEXT,
  incident_id TEXT,
  created_at  INTEGER NOT NULL,
  read_at     INTEGER,
  UNIQUE (user_id, key)
);
CREATE INDEX notifications_user_created ON notifications (user_id, created_at, id);
CREATE INDEX notifications_user_unread ON notifications (user_id, created_at, id) WHERE read_at IS NULL;
