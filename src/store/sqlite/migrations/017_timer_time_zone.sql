-- Version 17: the IANA time zone the person was in when they armed the timer (optional): the SOS
-- text says its deadline in it, before the zone of the person's contact list.
ALTER TABLE timers ADD COLUMN time_zone TEXT;
