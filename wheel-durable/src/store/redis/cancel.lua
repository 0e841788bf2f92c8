-- ARGV 4: key. 1 iff a pending or claimed timer was removed.
local key = ARGV[4]
if bury(key) then return done(0) end
local x = load(key)
if not x then return done(0) end
unindex(key, x, true)
sched_on_cancel(key)
if x.state == RUNNING then return done(0) end
return done(1)
