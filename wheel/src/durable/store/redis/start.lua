-- ARGV 4: key, 5: fence, 6: lease. {2, now, attempt} started,
-- {1, now, due} not yet due, {0} stale.
local key = ARGV[4]
local x = load(key)
if not x or x.fence ~= tonumber(ARGV[5]) or x.state ~= CLAIMED then return done({ 0 }) end
if x.due > NOW then return done({ 1, NOW, x.due }) end
unindex(key, x, false)
x.state = RUNNING
x.attempts = x.attempts + 1
x.lease = later(tonumber(ARGV[6]))
put(key, x)
return done({ 2, NOW, x.attempts })
