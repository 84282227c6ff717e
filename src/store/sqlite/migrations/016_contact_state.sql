-- Version 16: where each contact stands (issue 37): pending (added, no answer yet), confirmed,
-- declined, opted_out (their number refuses our texts). Contacts saved before are pending:
-- they never answered. An SOS goes to pending and confirmed contacts only.
ALTER TABLE contacts ADD COLUMN state TEXT NOT NULL DEFAULT 'pending'
  CHECK (state IN ('pending','confirmed','declined','opted_out'));
