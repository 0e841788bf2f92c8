-- ARGV 4: the dedup window, 5..: a key for each cancel. Returns for each,
-- in order, 1 iff a pending or claimed timer was removed; each entry sees
-- the ones before it, as separate calls in that order would.
local window = tonumber(ARGV[4])
prune_ended(PRUNE)
local keys = {}
for i = 5, #ARGV do keys[#keys + 1] = ARGV[i] end
prefetch(timers, keys)
prefetch(deads, keys)
local out = {}
for i = 5, #ARGV do
  local key = ARGV[i]
  local d = bury(key)
  local x = not d and load(key)
  if d then
    remember(key, 2, d.failed_at, window)
    out[#out + 1] = 0
  elseif not x then
    out[#out + 1] = 0
  else
    unindex(key, x, true)
    remember(key, 1, NOW, window)
    sched_on_cancel(key)
    -- A running timer's record goes, but its run was not stopped.
    out[#out + 1] = x.state == RUNNING and 0 or 1
  end
end
return done(out)
