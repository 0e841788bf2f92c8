-- ARGV 4: '' the namespace, else a flow key (never empty); 5: '1' pause,
-- '0' resume; 6: parked timers a resume makes pending at most (the rest
-- in the claims' wake-ups). 1 if that changed its state, else 0.
local flow, batch = ARGV[4], tonumber(ARGV[6])
if flow ~= '' then return done(F.set_paused(flow, ARGV[5] == '1', batch)) end
if ARGV[5] == '1' then return redis.call('HSET', PAUSED, '', '1') end
if redis.call('HDEL', PAUSED, '') == 0 then return 0 end
-- Its timers were never parked; the nodes, which claimed nothing while
-- it was paused, are woken as for an add of the earliest.
local first = first_score(DUE)
if first >= 0 and first <= WAKE_BEFORE then wake = first end
return done(1)
