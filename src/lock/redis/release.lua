-- Release a lock only if it is still held by the given token.
-- KEYS[1]  lock key
-- ARGV[1]  token of the lease being released
-- Returns  1 when the lock was deleted; 0 when it was free or held by another token.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
