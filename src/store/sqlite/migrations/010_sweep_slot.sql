-- sweep shards (src/domain/sweep-shard.ts): each timer's fixed slot, a hash of its id set when
-- it is armed; timers armed before this migration are slot 0 (shard 0 sweeps them)
ALTER TABLE timers ADD COLUMN sweep_slot INTEGER NOT NULL DEFAULT 0;
