-- Version 25: every access audited (docs/privacy.md, "The audit"). A line names whose data it
-- concerns (`person`) and, for a read without an open incident, why the moderator looked
-- (`reason`); the audit is listed by actor, person or incident, newest first. Lines of earlier
-- versions get their person from their incident (or from their target for a token revocation).
--
-- The action is no longer checked here: the list of actions is code's (domain/moderation.ts
-- AUDIT_ACTIONS, checked before every write), and a CHECK in SQLite can only be changed by
-- rebuilding the table, which would drop the actions another version adds. An incident id is
-- optional for the same reason (reads and actions on a person name none).

CREATE TABLE audit_v25 (
  id          TEXT PRIMARY KEY,
  at          INTEGER NOT NULL,
  actor       TEXT NOT NULL,
  action      TEXT NOT NULL,
  target      TEXT NOT NULL,
  incident_id TEXT,
  person      TEXT,
  reason      TEXT
);
INSERT INTO audit_v25 (id, at, actor, action, target, incident_id, person)
  SELECT a.id, a.at, a.actor, a.action, a.target, a.incident_id,
    CASE WHEN a.action = 'user.revoke_tokens' THEN a.target ELSE (SELECT i.user_id FROM incidents AS i WHERE i.id = a.incident_id) END
  FROM audit AS a;
DROP TABLE audit;
ALTER TABLE audit_v25 RENAME TO audit;
CREATE INDEX audit_newest ON audit (at, id);
-- the lines about one delivery: the contact id re-key moves them with it (version 14)
CREATE INDEX audit_target ON audit (target);
-- one actor's, one person's, one incident's lines, newest first
CREATE INDEX audit_actor ON audit (actor, at, id);
CREATE INDEX audit_person ON audit (person, at, id) WHERE person IS NOT NULL;
CREATE INDEX audit_incident ON audit (incident_id, at, id) WHERE incident_id IS NOT NULL;
