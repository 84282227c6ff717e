-- Version 14: contact ids become keyed hashes (HMAC with CONTACT_ID_KEY; docs/security.md, "Contact ids").
-- This table records what the stored ids were derived with: 'sha256' (the plain hash every id
-- before this version is) or the fingerprint of the key. The re-key itself needs the key, so it
-- runs in code when the store is opened by the service (./contact-ids.ts), not here.

CREATE TABLE contact_id_keying (
  id     INTEGER PRIMARY KEY CHECK (id = 1),
  scheme TEXT NOT NULL
);
INSERT INTO contact_id_keying (id, scheme) VALUES (1, 'sha256');

-- the lines about one delivery: the re-key moves them with it
CREATE INDEX audit_target ON audit (target);
