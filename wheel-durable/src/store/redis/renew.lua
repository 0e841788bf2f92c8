-- ARGV 4: lease, then (key, fence) for each held timer. 1 for each renewed.
local lease = tonumber(ARGV[4])
prefetch_args(5, 2)
local out = {}
for i = 5, #ARGV, 2 do
  local key = ARGV[i]
  local x = load(key)
  if not x or x.fence ~= tonumber(ARGV[i + 1]) or (x.state ~= CLAIMED and x.state ~= RUNNING) then
    out[#out + 1] = 0
  else
    unindex(key, x, false)
    x.lease = math.max(x.lease, later(lease))
    put(key, x)
    out[#out + 1] = 1
  end
end
return done(out)
