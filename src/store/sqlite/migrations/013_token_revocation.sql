-- Version 13: token revocation (docs/security.md, "Revocation"). One "tokens not before" stamp
-- per person (ms, store clock): a token whose iat is not after it is refused. A moderator's
-- revocation is audited: the audit takes the action 'user.revoke_tokens', whose line names a
-- person and no incident. SQLite cannot change a CHECK or a NOT NULL in place: the audit table
-- is rebuilt with its rows (inside this migration's transaction) and its index made again.

CREATE TABLE token_revocations (
  user_id    TEXT PRIMARY KEY,
  not_before INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE audit_v13 (
  id          TEXT PRIMARY KEY,
  at          INTEGER NOT NULL,
  actor       TEXT NOT NULL,
  action      TEXT NOT NULL CHECK (action IN ('delivery.resend','delivery.cancel','incident.note','user.revoke_tokens')),
  target      TEXT NOT NULL,
  -- NULL only for an action on a person (user.revoke_tokens)
  incident_id TEXT CHECK (incident_id IS NOT NULL OR action = 'user.revoke_tokens')
);
INSERT INTO audit_v13 (id, at, actor, action, target, incident_id) SELECT id, at, actor, action, target, incident_id FROM audit;
DROP TABLE audit;
ALTER TABLE audit_v13 RENAME TO audit;
CREATE INDEX audit_newest ON audit (at, id);
