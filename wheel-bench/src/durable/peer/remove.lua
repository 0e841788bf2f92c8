-- Marks a key deleted for its minute; the set lives 120 s from its first
-- member, long enough for the minute's ticks to read it.
-- KEYS[1]: the minute's deleted keys. ARGV[1]: the key.
redis.call('SADD', KEYS[1], ARGV[1])
local n = redis.call('SCARD', KEYS[1])
if n == 1 then
  redis.call('EXPIRE', KEYS[1], 120)
end
return n
