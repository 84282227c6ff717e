-- One open SOS per person: timers that joined an open incident besides its own, and what the
-- person wrote with each panic press.

-- JSON array of timer ids that joined the incident after it was opened (a second expiry, a panic ending a live timer)
ALTER TABLE incidents ADD COLUMN linked_timers TEXT;
-- JSON array of {"text", "at"} (at: ms since the epoch), oldest first
ALTER TABLE incidents ADD COLUMN panic_notes TEXT;
