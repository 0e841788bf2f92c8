-- ARGV 4: key. {how, at, expires} of its memory unless expired, or {}.
if not remembered(ARGV[4]) then return {} end
local how, at = struct.unpack('<BI8', redis.call('HGET', ENDED, ARGV[4]))
return { how, at, tonumber(redis.call('ZSCORE', ENDEDQ, ARGV[4])) }
