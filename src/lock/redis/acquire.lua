-- Take a lock if it is free and hand out the next fence number.
-- KEYS[1]  lock key (its value is the holder's token)
-- KEYS[2]  fence counter key (`<lock key>:fence`, same hash tag: same Redis Cluster slot)
-- ARGV[1]  token of the would-be holder
-- ARGV[2]  lease ttl in milliseconds
-- Returns  the new fence number (integer) when the lock was taken; nil when another holder has it;
--          0 when the lock was taken but the fence counter is gone (Redis restarted or was
--          flushed): the caller seeds it above the store's highest fence with seed.lua.
-- SET NX and INCR run in one script so a fence is only spent on an actual acquisition.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  if redis.call('EXISTS', KEYS[2]) == 0 then
    return 0
  end
  return redis.call('INCR', KEYS[2])
end
return false
