-- Prolong a lock only if it is still held by the given token.
-- KEYS[1]  lock key
-- ARGV[1]  token of the lease being extended
-- ARGV[2]  new ttl in milliseconds, counted from now
-- Returns  1 when the ttl was set; 0 when the lock expired or is held by another token.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
