-- Version 5: the W3C traceparent that lets an escalation and its SMS sends continue the
-- trace of the request that armed the timer. Nullable: older rows have none.

ALTER TABLE timers ADD COLUMN traceparent TEXT;
ALTER TABLE deliveries ADD COLUMN traceparent TEXT;
