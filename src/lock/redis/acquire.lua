-- Take a lock if it is free and hand out the next fence number.
-- KEYS[1]  lock key (its value is the holder's token)
-- KEYS[2]  fence counter key (`<lock key>:fence`)
-- ARGV[1]  token of the would-be holder
-- ARGV[2]  lease ttl in milliseconds
-- Returns  the new fence number (integer) when the lock was taken; nil when another holder has it.
-- SET NX and INCR run in one script so a fence is only spent on an actual acquisition.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('INCR', KEYS[2])
end
return false
