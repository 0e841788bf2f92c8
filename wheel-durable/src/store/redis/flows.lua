-- {namespace paused (0|1), the defaults' encoded limits or false, then for
-- each flow key listed (flow_state.rs): key, paused (0|1), parked count,
-- its own encoded limits or false, valid permits, breaker phase (0 closed,
-- 1 open, 2 half-open), failures, step, until (-1: none)}, in no order.
local names, seen = {}, {}
local function list(f)
  if f ~= '' and not seen[f] then
    seen[f] = true
    names[#names + 1] = f
  end
end
local paused = {}
for _, f in ipairs(redis.call('HKEYS', PAUSED)) do
  paused[f] = true
  list(f)
end
for _, f in ipairs(redis.call('ZRANGE', PFLOWS, 0, -1)) do list(f) end
for _, f in ipairs(redis.call('HKEYS', LIMITS)) do list(f) end
-- A stored breaker is open, half-open or has counted failures.
for _, f in ipairs(redis.call('HKEYS', BREAKERS)) do list(f) end
for _, f in ipairs(redis.call('ZRANGE', INFLIGHT, 0, -1)) do
  if F.permits_of(f).n > 0 then list(f) end
end
F.load_limits(names)
local out = { paused[''] and 1 or 0, F.defaults or false }
for _, f in ipairs(names) do
  local b = F.breaker(f)
  local till = -1
  if b.phase == 1 then
    till = b.till
  elseif b.phase == 2 then
    till = tonumber(redis.call('ZSCORE', WAKEUPS, f)) or -1
  end
  local e = { f, paused[f] and 1 or 0, redis.call('ZCARD', parked_index(f)), F.own[f] or false,
              F.permits_of(f).n, b.phase, b.failures, b.step, till }
  for _, v in ipairs(e) do out[#out + 1] = v end
end
-- The permits found invalid go.
return done(out)
