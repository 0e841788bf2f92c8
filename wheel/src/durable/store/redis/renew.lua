-- ARGV 4: key, 5: fence, 6: lease.
local key = ARGV[4]
local x = load(key)
if not x or x.fence ~= tonumber(ARGV[5]) or x.state == PENDING then return done(0) end
unindex(key, x, false)
x.lease = math.max(x.lease, later(tonumber(ARGV[6])))
put(key, x)
return done(1)
