-- ARGV 4: key, 5: kind, 6: due or delay.
local key = ARGV[4]
local x = load(key)
if not x or x.state == RUNNING then return done(0) end
unindex(key, x, false)
x.due = due_of(ARGV[5], ARGV[6])
x.first = x.due
x.state = PENDING
put(key, x)
return done(1)
