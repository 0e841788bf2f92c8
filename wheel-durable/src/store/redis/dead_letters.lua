-- ARGV 4: the last index to return (-1: all). {key, record, ...}, oldest first.
local out = {}
for _, key in ipairs(redis.call('ZRANGE', DEADQ, 0, tonumber(ARGV[4]))) do
  out[#out + 1] = key
  out[#out + 1] = redis.call('HGET', DEAD, key)
end
return out
