-- Version 21: the silent SOS a duress check-in owes (docs/security.md, "Duress code"). The CAS that
-- resolves a timer with the duress PIN sets duress_pending = 1 in the same UPDATE; it is cleared once
-- the duress incident is open (or the duress joined the person's open one). A crash between the two
-- writes leaves it set, and the sweep's repair opens the incident (invariant 4). Never shown to the
-- person: it is not part of any timer view.

ALTER TABLE timers ADD COLUMN duress_pending INTEGER CHECK (duress_pending = 1);
CREATE INDEX timers_duress_pending ON timers (resolved_at) WHERE duress_pending = 1;
