-- Lists of changes page on the keyset (updated_at, id): records sharing a millisecond are
-- ordered by id, so a page boundary inside one millisecond skips none of them.
CREATE INDEX timers_user_updated_id ON timers (user_id, updated_at, id);
CREATE INDEX incidents_updated_id ON incidents (updated_at, id);
