-- ARGV 4: '' the namespace, else a flow key (never empty); 5: '1' pause,
-- '0' resume; 6: parked timers a resume makes pending at most (the rest
-- continue in the claims). 1 if that changed its state, else 0.
local flow, batch = ARGV[4], tonumber(ARGV[6])
if ARGV[5] == '1' then
  -- Pausing a resuming key again stops its resume.
  if flow ~= '' then redis.call('ZREM', RESUMING, flow) end
  return redis.call('HSET', PAUSED, flow, '1')
end
if redis.call('HDEL', PAUSED, flow) == 0 then return 0 end
if flow == '' then
  -- Its timers were never parked; the nodes, which claimed nothing while
  -- it was paused, are woken as for an add of the earliest.
  local first = first_score(DUE)
  if first >= 0 and first <= WAKE_BEFORE then wake = first end
  return done(1)
end
local _, left = unpark(flow, batch)
if left > 0 then redis.call('ZADD', RESUMING, 0, flow) end
return done(1)
