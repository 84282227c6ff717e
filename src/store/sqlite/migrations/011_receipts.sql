-- Version 11: receipts matched to the attempt they are about (docs/sms.md, "Delivery receipts").
-- A moderator's resend moves the delivery's message id to earlier_message_ids (a JSON array,
-- oldest first; NULL when none): receipts about those messages move nothing. A receipt for a
-- message no delivery has recorded yet waits in early_receipts (no number, no text) until an
-- attempt is recorded with that id, at most a day (EARLY_RECEIPT_KEEP_MS).

ALTER TABLE deliveries ADD COLUMN earlier_message_ids TEXT;

CREATE TABLE early_receipts (
  message_id  TEXT PRIMARY KEY,
  status      TEXT NOT NULL CHECK (status IN ('sent','delivered','failed')),
  received_at INTEGER NOT NULL
);
-- expiry: the oldest first
CREATE INDEX early_receipts_received ON early_receipts (received_at);
