-- ARGV 4..: (key, fence) for each claim. 1 for each handed back.
prefetch_args(4, 2)
local out = {}
for i = 4, #ARGV, 2 do
  local key = ARGV[i]
  local x = load(key)
  if not x or x.fence ~= tonumber(ARGV[i + 1]) or x.state ~= CLAIMED then
    out[#out + 1] = 0
  else
    unindex(key, x, false)
    x.state = PENDING
    put(key, x)
    out[#out + 1] = 1
  end
end
return done(out)
