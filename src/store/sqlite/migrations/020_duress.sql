-- Version 20: the duress PIN (docs/security.md, "Duress code"). One row per person who set one:
-- the scrypt hash and its per-person salt (base64), and the scrypt cost used. Never the PIN.

CREATE TABLE duress_pins (
  user_id    TEXT PRIMARY KEY,
  salt       TEXT NOT NULL,
  hash       TEXT NOT NULL,
  cost       INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
) WITHOUT ROWID;
