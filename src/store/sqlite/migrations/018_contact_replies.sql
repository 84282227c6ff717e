-- Version 18: replies from contacts (issue 37, item 2). Each incident keeps the contacts who
-- answered "I'm on it" (YES), as a JSON array of {contactId, name, at (ms), messageSid}, once per
-- contact; NULL: none. A reply is mapped to its contacts by number: index the number.
ALTER TABLE incidents ADD COLUMN contact_acks TEXT;
CREATE INDEX contacts_phone ON contacts (phone);
-- a contact who opted out (STOP) while confirmed is confirmed again by START: remembered here
-- (1) while they are opted_out; 0 otherwise. Not part of the contact as the API shows it.
ALTER TABLE contacts ADD COLUMN confirmed_before INTEGER NOT NULL DEFAULT 0;
