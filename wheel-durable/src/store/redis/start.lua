-- ARGV 4: lease, then (key, fence, chain step or '', flow key or '') for
-- each claim. For each, in order, four numbers: 2, now, attempt, 0
-- (started); 5, now, attempt, at (started, its rate slot at `at`); 1, now,
-- due, 0 (not yet due); 3, now, 0, 0 (paused: handed back or parked); 4,
-- now, until, 0 (held back by its key's parallelism or rate, still
-- claimed); 0, 0, 0, 0 (stale, or refused by the schedule rules).
local lease = tonumber(ARGV[4])
prefetch_args(5, 4)
prefetch_owners(5, 4)
local steps = decode_steps(7, 4)

-- The paused flow keys among the batch's (`['']`: the namespace) and
-- their limits, with one HMGET each, or none at all (one EXISTS) while
-- nothing is paused and no key has limits.
local paused, gated = {}, false
if redis.call('EXISTS', PAUSED, LIMITS) > 0 then
  gated = true
  local names, seen = { '' }, { [''] = true }
  for i = 8, #ARGV, 4 do
    if not seen[ARGV[i]] then
      seen[ARGV[i]] = true
      names[#names + 1] = ARGV[i]
    end
  end
  hmget_each(PAUSED, names, function(f, v) paused[f] = v and true end)
  F.load_limits(names)
end

local out = {}
local function answer(kind, now, a, b)
  out[#out + 1], out[#out + 2], out[#out + 3], out[#out + 4] = kind, now, a, b
end

-- Hands the claim back (the namespace is paused) or parks it under `flow`.
local function hold(key, x, flow)
  if paused[''] then
    -- No node claims it while the namespace is paused, and the resume
    -- wakes them, so this announces nothing.
    local w = wake
    unindex(key, x, false)
    x.state = PENDING
    put(key, x)
    wake = w
  else
    flow_of[key] = flow
    unindex(key, x, false)
    x.state = PARKED
    put(key, x)
  end
  answer(3, NOW, 0, 0)
end

for i = 5, #ARGV, 4 do
  local key, flow = ARGV[i], ARGV[i + 3]
  local x = load(key)
  local verdict, slot, probe = 'pass', nil, false
  if not x or x.fence ~= tonumber(ARGV[i + 1]) or x.state ~= CLAIMED then
    verdict = 'stale'
  elseif x.due > NOW then
    verdict = 'not yet'
  elseif paused[''] or (flow ~= '' and paused[flow]) then
    verdict = 'park'
  elseif gated and flow ~= '' then
    verdict, slot, probe = F.gate(flow)
  end
  if verdict == 'stale' then
    answer(0, 0, 0, 0)
  elseif verdict == 'not yet' then
    answer(1, NOW, x.due, 0)
  elseif verdict == 'park' then
    hold(key, x, flow)
  elseif verdict == 'wait' then
    answer(4, NOW, slot, 0)
  elseif not start_gate(key, steps[i + 2]) then
    answer(0, 0, 0, 0)
  else
    x = load(key)
    unindex(key, x, false)
    x.state = RUNNING
    x.attempts = x.attempts + 1
    x.lease = later(lease)
    put(key, x)
    local at = gated and flow ~= '' and F.take(key, x, flow, slot, probe)
    if at then answer(5, NOW, x.attempts, at) else answer(2, NOW, x.attempts, 0) end
  end
end
return done(out)
