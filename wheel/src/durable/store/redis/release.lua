-- ARGV 4: key, 5: fence.
local key = ARGV[4]
local x = load(key)
if not x or x.fence ~= tonumber(ARGV[5]) or x.state ~= CLAIMED then return done(0) end
unindex(key, x, false)
x.state = PENDING
put(key, x)
return done(1)
