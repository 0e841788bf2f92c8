-- ARGV 4: key, 5: kind, 6: due or delay.
local key = ARGV[4]
local d = bury(key)
if not d then return done(0) end
forget(key)
pending(key, due_of(ARGV[5], ARGV[6]), d.payload, 0)
return done(1)
