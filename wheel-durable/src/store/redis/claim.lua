-- ARGV 4: window, 5: lease, 6: max, 7: max attempts, 8: expired leases per call.
-- ARGV 9: keys of expired leases to report at most, 10: parked timers the
-- wake-ups make pending at most.
-- Returns {now, reclaimed, expired_dead, next_due, next_lease, n,
--          then the first n keys whose lease had passed,
--          then key, due, first due, attempts, fence, first fence, payload,
--          schedule record for each claimed timer}
-- (-1: none). The schedule record is that of a chain run's schedule (false
-- for other timers): the node plans the step that goes with the run's
-- start from it (claimed_schedules.rs) instead of reading it again.
local window, lease, max = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local max_attempts = tonumber(ARGV[7])
local reclaimed, expired_dead = 0, 0
-- Every node claims on each poll: an idle namespace's memories go too.
prune_ended(10 * PRUNE)
local expired = redis.call('ZRANGEBYSCORE', LEASE, '-inf', NOW, 'LIMIT', 0, tonumber(ARGV[8]))
local shown = math.min(#expired, tonumber(ARGV[9]))
prefetch(timers, expired)
for _, key in ipairs(expired) do
  local x = load(key)
  if x.state == RUNNING and x.attempts >= max_attempts then
    make_dead(key, x, 'lease expired during attempt ' .. x.attempts .. ', the last allowed')
    expired_dead = expired_dead + 1
  else
    unindex(key, x, false)
    x.state = PENDING
    put(key, x)
    reclaimed = reclaimed + 1
  end
end
F.wake_ups(tonumber(ARGV[10]))
-- The timers taken back or unparked are pending again: the due scan must
-- see them. The wake-ups' breakers are written too.
flush()
local out = { NOW, reclaimed, expired_dead, 0, 0, shown }
for i = 1, shown do out[#out + 1] = expired[i] end
-- A paused namespace claims nothing and reports no next due time: its
-- nodes wait for the resume's wake-up or their safety poll.
local paused = F.paused_all()
if max > 0 and not paused then
  local due = redis.call('ZRANGEBYSCORE', DUE, '-inf', NOW + window, 'LIMIT', 0, max)
  prefetch(timers, due)
  -- The chain runs' schedule ids, and where their records go in `out`.
  local ids, slots = {}, {}
  -- One INCRBY for the batch: fences base+1 .. base+n, as n INCRs would give.
  local base = 0
  if #due > 0 then base = redis.call('INCRBY', FENCE, #due) - #due end
  for i, key in ipairs(due) do
    local x = load(key)
    unindex(key, x, false)
    -- The fence of the first started run names the delivery: kept when
    -- this claim replaces it (see record.rs, claim_with).
    if x.attempts >= 1 and not x.ffence then x.ffence = x.fence end
    x.fence = base + i
    x.state = CLAIMED
    x.lease = math.min(math.max(x.due, NOW) + lease, MAX_MS)
    put(key, x)
    out[#out + 1] = key
    out[#out + 1] = x.due
    out[#out + 1] = x.first
    out[#out + 1] = x.attempts
    out[#out + 1] = x.fence
    out[#out + 1] = x.ffence or x.fence
    out[#out + 1] = payload_of(x)
    local id, chain = owner(key)
    if chain then
      ids[#ids + 1] = id
      slots[#slots + 1] = #out + 1
    end
    out[#out + 1] = false
  end
  hmget_each(SCHED, ids, function(_, r, n) out[slots[n]] = r end)
  flush()
end
out[4] = paused and -1 or first_score(DUE)
out[5] = first_score(LEASE)
return done(out)
