-- ARGV 4: lease, then (key, fence, chain step or '') for each claim. For
-- each, in order: 2, now, attempt (started); 1, now, due (not yet due);
-- 0, 0, 0 (stale, or refused by the schedule rules).
local lease = tonumber(ARGV[4])
prefetch_args(5, 3)
prefetch_owners(5, 3)
local steps = decode_steps(7, 3)
local out = {}
for i = 5, #ARGV, 3 do
  local key = ARGV[i]
  local x = load(key)
  if not x or x.fence ~= tonumber(ARGV[i + 1]) or x.state ~= CLAIMED then
    out[#out + 1], out[#out + 2], out[#out + 3] = 0, 0, 0
  elseif x.due > NOW then
    out[#out + 1], out[#out + 2], out[#out + 3] = 1, NOW, x.due
  elseif not start_gate(key, steps[i + 2]) then
    out[#out + 1], out[#out + 2], out[#out + 3] = 0, 0, 0
  else
    x = load(key)
    unindex(key, x, false)
    x.state = RUNNING
    x.attempts = x.attempts + 1
    x.lease = later(lease)
    put(key, x)
    out[#out + 1], out[#out + 2], out[#out + 3] = 2, NOW, x.attempts
  end
end
return done(out)
