-- ARGV 4..: (key, kind 'a'|'r', due or delay) for each reschedule. Returns
-- for each, in order, 1 iff a pending or claimed timer got the new due
-- time; each entry sees the ones before it.
prefetch_args(4, 3)
local out = {}
for i = 4, #ARGV, 3 do
  local key = ARGV[i]
  local x = load(key)
  if not x or x.state == RUNNING then
    out[#out + 1] = 0
  else
    unindex(key, x, false)
    x.due = due_of(ARGV[i + 1], ARGV[i + 2])
    x.first = x.due
    x.state = PENDING
    put(key, x)
    out[#out + 1] = 1
  end
end
return done(out)
