-- Seed a lost fence counter and hand out the next fence, only for the current holder.
-- KEYS[1]  lock key
-- KEYS[2]  fence counter key
-- ARGV[1]  token of the holder (acquire.lua answered 0)
-- ARGV[2]  the highest fence already used (read from the store)
-- Returns  the new fence number, above ARGV[2] and above the counter; nil when the token no
--          longer holds the lock.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return false
end
local floor = tonumber(ARGV[2])
local current = tonumber(redis.call('GET', KEYS[2]) or '0')
if current < floor then
  redis.call('SET', KEYS[2], ARGV[2])
end
return redis.call('INCR', KEYS[2])
