-- ARGV 4: key. {1, record} for a timer, {2, dead letter}, or {0}.
local r = redis.call('HGET', T, ARGV[4])
if r then return { 1, r } end
r = redis.call('HGET', DEAD, ARGV[4])
if r then return { 2, r } end
return { 0 }
