-- ARGV 4..: (key, fence, flow key, never empty) for each claim. Parks
-- each claim still held with its fence under its flow key, and gives the
-- key a wake time WAKE_SPAN from now unless it has one. 1 for each parked.
prefetch_args(4, 3)
local out, woken = {}, {}
for i = 4, #ARGV, 3 do
  local key, flow = ARGV[i], ARGV[i + 2]
  local x = load(key)
  if not x or x.fence ~= tonumber(ARGV[i + 1]) or x.state ~= CLAIMED then
    out[#out + 1] = 0
  else
    flow_of[key] = flow
    unindex(key, x, false)
    x.state = PARKED
    put(key, x)
    if not woken[flow] then
      woken[flow] = true
      -- A key with a wake time keeps it: that wake-up hands these out
      -- with the rest, as its breaker or rate allows.
      redis.call('ZADD', WAKEUPS, 'NX', later(WAKE_SPAN), flow)
    end
    out[#out + 1] = 1
  end
end
return done(out)
