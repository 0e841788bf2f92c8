-- ARGV 4: lease, then (key, fence, chain step or '', flow key or '') for
-- each claim. For each, in order: 2, now, attempt (started); 1, now, due
-- (not yet due); 3, now, 0 (paused: handed back or parked); 0, 0, 0
-- (stale, or refused by the schedule rules).
local lease = tonumber(ARGV[4])
prefetch_args(5, 4)
prefetch_owners(5, 4)
local steps = decode_steps(7, 4)

-- The paused flow keys among the batch's (`['']`: the namespace), with
-- one HMGET, or none at all while nothing is paused.
local paused = {}
if redis.call('EXISTS', PAUSED) == 1 then
  local names, seen = { '' }, { [''] = true }
  for i = 8, #ARGV, 4 do
    if not seen[ARGV[i]] then
      seen[ARGV[i]] = true
      names[#names + 1] = ARGV[i]
    end
  end
  hmget_each(PAUSED, names, function(f, v) paused[f] = v and true end)
end

local out = {}
for i = 5, #ARGV, 4 do
  local key = ARGV[i]
  local x = load(key)
  if not x or x.fence ~= tonumber(ARGV[i + 1]) or x.state ~= CLAIMED then
    out[#out + 1], out[#out + 2], out[#out + 3] = 0, 0, 0
  elseif x.due > NOW then
    out[#out + 1], out[#out + 2], out[#out + 3] = 1, NOW, x.due
  elseif paused[''] then
    -- Handed back: no node claims it while the namespace is paused, and
    -- the resume wakes them, so this announces nothing.
    local w = wake
    unindex(key, x, false)
    x.state = PENDING
    put(key, x)
    wake = w
    out[#out + 1], out[#out + 2], out[#out + 3] = 3, NOW, 0
  elseif ARGV[i + 3] ~= '' and paused[ARGV[i + 3]] then
    flow_of[key] = ARGV[i + 3]
    unindex(key, x, false)
    x.state = PARKED
    put(key, x)
    out[#out + 1], out[#out + 2], out[#out + 3] = 3, NOW, 0
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
