-- Version 15: the language each contact gets texts in (absent: the person's default), and the
-- person's defaults for their contacts' texts: language, and the IANA time zone times are said in.
ALTER TABLE contacts ADD COLUMN language TEXT;

CREATE TABLE contact_settings (
  user_id   TEXT PRIMARY KEY,
  language  TEXT,
  time_zone TEXT
);
