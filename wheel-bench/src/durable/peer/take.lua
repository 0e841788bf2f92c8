-- One tick: takes every task scored in [ARGV[1], ARGV[2]] (both ends
-- included) out of the minute's sorted set, so that no other node takes
-- them, and returns the minute's deleted keys first, then the tasks.
-- KEYS[1]: the minute's tasks, KEYS[2]: the minute's deleted keys.
local deleted = redis.call('SMEMBERS', KEYS[2])
local tasks = redis.call('ZRANGE', KEYS[1], ARGV[1], ARGV[2], 'BYSCORE')
redis.call('ZREMRANGEBYSCORE', KEYS[1], ARGV[1], ARGV[2])
local reply = { deleted }
for _, t in ipairs(tasks) do
  reply[#reply + 1] = t
end
return reply
