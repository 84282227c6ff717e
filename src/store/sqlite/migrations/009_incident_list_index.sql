-- the moderators' list without a status filter (oldest first): read through an index, not a
-- scan and sort of every incident ever recorded
CREATE INDEX incidents_created ON incidents (created_at, id);
