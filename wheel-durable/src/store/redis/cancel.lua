-- ARGV 4: the dedup window, 5: key. 1 iff a pending or claimed timer was
-- removed.
local window, key = tonumber(ARGV[4]), ARGV[5]
prune_ended(PRUNE)
local d = bury(key)
if d then
  remember(key, 2, d.failed_at, window)
  return done(0)
end
local x = load(key)
if not x then return done(0) end
unindex(key, x, true)
remember(key, 1, NOW, window)
sched_on_cancel(key)
if x.state == RUNNING then return done(0) end
return done(1)
