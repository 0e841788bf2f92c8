-- Flow control: the gate of a start, the permits, the rate, the breakers
-- and the wake-ups (store/flow_state.rs states the rules, flows.rs the
-- keys). Follows the prelude (and schedule.lua where a script has it);
-- scripts.rs puts RATE_HORIZON_US, MAX_RETRY_AFTER and WAKE_SPAN before the
-- prelude. Every function lives in the table `F` (the prelude's locals
-- leave Lua little room for more). Each flow key's limits, breaker, tat and
-- permits are read at most once per script call, into F's caches, and
-- written by `flush_flows` (one of the prelude's `flushers`) with one
-- command per hash or set; wake times and pauses are written at once.
local LIMITS, TAT, BREAKERS
local CLOSED, OPEN, HALF = 0, 1, 2
-- The functions and the call's caches, which `begin` empties (below):
-- own: flow key -> its own limits (false: none), once read; defaults: the
-- defaults (false: none), once read; decoded: flow key -> its limits as
-- the gate uses them (false: none); breakers: flow key -> its breaker,
-- once read; tats: flow key -> tat (µs), once read; permits: flow key ->
-- its valid permits, once validated; dirty: the flow keys to write, by kind.
local F = { own = {}, decoded = {}, breakers = {}, tats = {}, permits = {},
            dirty = { b = {}, t = {}, p = {} } }

-- a / b rounded up, exactly for integers under 2^53 (a double's quotient
-- may round to the integer just below: the remainder says).
local function ceil_div(a, b)
  local q = math.floor(a / b)
  local r = a - q * b
  while r < 0 do q, r = q - 1, r + b end
  while r >= b do q, r = q + 1, r - b end
  if r > 0 then q = q + 1 end
  return q
end

-- Limits as the gate uses them: the rate as its GCRA interval and
-- tolerance (µs), or nil when `b` is not an encoded Limits.
local function decode_limits(b)
  if not b or #b ~= 49 then return nil end
  local flags, count, period, burst, par, failures, cooldown, maxcd, after =
    struct.unpack('<BI4I8I4I4I4I8I8I8', b)
  local function has(bit) return math.floor(flags / bit) % 2 == 1 end
  local l = {}
  if has(1) then
    l.interval = ceil_div(period * 1000, math.max(count, 1))
    l.per_span = ceil_div(count * WAKE_SPAN, math.max(period, 1))
    l.tolerance = l.interval * (math.max(burst, 1) - 1)
  end
  if has(2) then l.parallelism = par end
  -- The parked timers a wake-up may make pending at once (flow_state.rs,
  -- "Wake-ups"): the rate's starts in WAKE_SPAN plus the parallelism.
  if l.interval or l.parallelism then
    l.allowance = math.max((l.per_span or 0) + (l.parallelism or 0), 1)
  end
  if has(4) then
    l.breaker = { failures = failures, cooldown = cooldown, max_cooldown = maxcd }
    if has(8) then l.breaker.pause_after = after end
  end
  return l
end

-- Reads the own limits of each key of `flows` not read yet, and the
-- defaults, with one HMGET.
function F.load_limits(flows)
  local need = {}
  if F.defaults == nil then need[1] = '' end
  for _, f in ipairs(unread(flows, F.own)) do
    if f ~= '' then need[#need + 1] = f end
  end
  if #need == 0 then return end
  hmget_each(LIMITS, need, function(f, v)
    if f == '' then F.defaults = v or false else F.own[f] = v or false end
  end)
end

-- `flow`'s limits (its own, else the defaults), or nil for none.
function F.limits_of(flow)
  local l = F.decoded[flow]
  if l == nil then
    if F.own[flow] == nil or F.defaults == nil then F.load_limits({ flow }) end
    l = decode_limits(F.own[flow] or F.defaults or nil) or false
    F.decoded[flow] = l
  end
  return l or nil
end

-- A breaker: phase (1 byte), failures, step (4 each), until, opened_at,
-- the probe's fence (8 each, 0: no probe), then the probe's key. A closed
-- breaker with no failure is not stored.
local function decode_breaker(r)
  if not r then
    return { phase = CLOSED, failures = 0, step = 0, till = 0, opened = 0, pfence = 0, pkey = '' }
  end
  local phase, failures, step, till, opened, pfence, at = struct.unpack('<BI4I4I8I8I8', r)
  return { phase = phase, failures = failures, step = step, till = till, opened = opened,
           pfence = pfence, pkey = string.sub(r, at) }
end

local function encode_breaker(b)
  return struct.pack('<BI4I4I8I8I8', b.phase, b.failures, b.step, b.till, b.opened, b.pfence)
    .. b.pkey
end

function F.breaker(flow)
  local b = F.breakers[flow]
  if not b then
    b = decode_breaker(redis.call('HGET', BREAKERS, flow))
    F.breakers[flow] = b
  end
  return b
end

-- Marks `flow`'s state of `kind` ('b' breaker, 't' tat, 'p' permits) to
-- be written.
local function dirty(kind, flow)
  F.dirty[kind][flow] = true
end

function F.reset_breaker(flow)
  F.breakers[flow] = decode_breaker(nil)
  dirty('b', flow)
end

-- Whether the run `key` with `fence` is running with its lease.
local function running(key, fence)
  local x = load(key)
  return x ~= nil and x.state == RUNNING and x.fence == fence and x.lease > NOW
end

-- `flow`'s valid permits: { n, first, rem, gone, add }. A member whose
-- score (its lease end) has come is checked against its record once per
-- call: still running with that fence and a later lease (a renewal the
-- score missed) it is re-scored, else removed at the flush; the others
-- are valid (the flush of every script removes the member of a run that
-- ends, and moves the score of one renewed). `first` is the earliest
-- lease end among them, read when a wait needs it.
function F.permits_of(flow)
  local p = F.permits[flow]
  if p then return p end
  local idx = INFLIGHT .. ':' .. flow
  p = { n = redis.call('ZCARD', idx), rem = {}, gone = {}, add = {}, leases = {} }
  F.permits[flow] = p
  if p.n == 0 then return p end
  local due = redis.call('ZRANGEBYSCORE', idx, '-inf', NOW)
  if #due == 0 then return p end
  local runs = {}
  for i, m in ipairs(due) do
    local fence, at = struct.unpack('<I8', m)
    runs[i] = { m = m, key = string.sub(m, at), fence = fence }
  end
  local keys = {}
  for i, r in ipairs(runs) do keys[i] = r.key end
  prefetch(timers, keys)
  local entries = {}
  hmget_each(PERMITS, keys, function(k, v) entries[k] = v end)
  for _, r in ipairs(runs) do
    if running(r.key, r.fence) then
      local lease = load(r.key).lease
      p.add[#p.add + 1], p.add[#p.add + 2] = lease, r.m
      p.leases[#p.leases + 1] = lease
    else
      p.n = p.n - 1
      p.rem[#p.rem + 1] = r.m
      -- The key's entry, unless a later run of it holds another permit.
      if entries[r.key] == string.sub(r.m, 1, 8) .. flow then p.gone[#p.gone + 1] = r.key end
    end
  end
  dirty('p', flow)
  return p
end

-- The earliest lease end among `flow`'s valid permits (some are held).
local function first_lease(flow, p)
  local e = redis.call('ZRANGEBYSCORE', INFLIGHT .. ':' .. flow, string.format('(%.0f', NOW),
                       '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  local first = tonumber(e[2])
  for _, l in ipairs(p.leases) do
    if not first or l < first then first = l end
  end
  return first
end

function F.tat_of(flow)
  local t = F.tats[flow]
  if not t then
    t = tonumber(redis.call('HGET', TAT, flow)) or 0
    F.tats[flow] = t
  end
  return t
end

-- `b`'s cool-down at `step`, or `retry_after` (capped) if longer.
local function cooldown_at(b, step, retry_after)
  local d = math.min(b.cooldown * 2 ^ math.min(step, 63), math.max(b.max_cooldown, b.cooldown))
  return math.max(d, math.min(retry_after, MAX_RETRY_AFTER))
end

-- Steps 3 to 5 of the gate for a claim of `flow` (not empty, not
-- paused): 'park'; or 'wait' and until when; or 'pass', the rate's slot
-- (µs, nil without a rate) and whether it is the breaker's probe.
function F.gate(flow)
  local l = F.limits_of(flow)
  if not l then return 'pass', nil, false end
  local probe = false
  if l.breaker then
    local b = F.breaker(flow)
    if b.phase == OPEN then return 'park' end
    if b.phase == HALF then
      if b.pfence > 0 and running(b.pkey, b.pfence) then return 'park' end
      probe = true
    end
  end
  if l.parallelism then
    local p = F.permits_of(flow)
    if p.n >= l.parallelism then return 'wait', first_lease(flow, p) end
  end
  local slot = nil
  if l.interval then
    local now_us = NOW * 1000
    slot = math.max(now_us, F.tat_of(flow) - l.tolerance)
    if slot > now_us + RATE_HORIZON_US then
      return 'wait', ceil_div(slot - RATE_HORIZON_US, 1000)
    end
  end
  return 'pass', slot, probe
end

-- What the started run `key` (record `x`) of `flow` takes: a permit, the
-- slot, the probe. Returns the slot in ms if later than now, else nil.
function F.take(key, x, flow, slot, probe)
  local l = F.limits_of(flow)
  if not l then return nil end
  if l.parallelism then
    local p, fence = F.permits_of(flow), struct.pack('<I8', x.fence)
    p.n = p.n + 1
    p.leases[#p.leases + 1] = x.lease
    p.add[#p.add + 1], p.add[#p.add + 2] = x.lease, fence .. key
    p.took = p.took or {}
    p.took[#p.took + 1], p.took[#p.took + 2] = key, fence .. flow
    dirty('p', flow)
  end
  if probe then
    local b = F.breaker(flow)
    b.pfence, b.pkey = x.fence, key
    dirty('b', flow)
  end
  if not (slot and l.interval) then return nil end
  F.tats[flow] = math.max(F.tat_of(flow), NOW * 1000) + l.interval
  dirty('t', flow)
  local at = ceil_div(slot, 1000)
  if at > NOW then return at end
  return nil
end

-- A finish the store accepted, of the run `key` with `fence`: `flow`'s
-- breaker learns `class` ('s' success, 'f' failure, else neutral).
function F.finished(key, fence, flow, class, retry_after)
  if flow == '' then return end
  local l = F.limits_of(flow)
  if not (l and l.breaker) then return end
  local lb, b = l.breaker, F.breaker(flow)
  local is_probe = b.pfence == fence and b.pkey == key
  if class == 's' then
    if b.phase == CLOSED then
      b.failures = 0
      dirty('b', flow)
    elseif b.phase == HALF and is_probe then
      F.reset_breaker(flow)
      redis.call('ZADD', WAKEUPS, NOW, flow)
    end
    return
  end
  if class ~= 'f' then return end
  if b.phase == CLOSED then
    b.failures = b.failures + 1
    dirty('b', flow)
    if b.failures < lb.failures then return end
    b.opened, b.step = NOW, 0
  elseif b.phase == HALF and is_probe then
    b.step = b.step + 1
  else
    return
  end
  b.phase, b.pfence, b.pkey = OPEN, 0, ''
  b.till = later(cooldown_at(lb, b.step, retry_after))
  dirty('b', flow)
  if lb.pause_after and NOW - b.opened >= lb.pause_after then
    redis.call('HSET', PAUSED, flow, '1')
    redis.call('ZREM', WAKEUPS, flow)
  else
    redis.call('ZADD', WAKEUPS, b.till, flow)
  end
end

-- Makes up to `limit` (at least 1) of `flow`'s parked timers pending,
-- earliest (due, key) first, as its index orders them. Returns how many it
-- moved and how many stay parked.
function F.unpark(flow, limit)
  local idx = parked_index(flow)
  local keys = redis.call('ZRANGE', idx, 0, limit - 1)
  prefetch(timers, keys)
  for _, k in ipairs(keys) do
    local x = load(k)
    flow_of[k] = flow
    unindex(k, x, false)
    x.state = PENDING
    put(k, x)
  end
  return #keys, redis.call('ZCARD', idx) - #keys
end

-- Whether the namespace is paused.
function F.paused_all()
  return redis.call('HEXISTS', PAUSED, '') == 1
end

-- Byte order (Lua's `<` on strings follows the server's locale).
local function bytes_lt(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- A claim's step after taking leases back: the keys whose wake time has
-- come, in byte order, with a budget of `budget` timers made pending.
function F.wake_ups(budget)
  local due = redis.call('ZRANGEBYSCORE', WAKEUPS, '-inf', NOW)
  if #due == 0 then return end
  table.sort(due, bytes_lt)
  local paused = {}
  hmget_each(PAUSED, due, function(f, v) paused[f] = v and true end)
  F.load_limits(due)
  for _, f in ipairs(due) do
    if budget <= 0 then return end
    local l = F.limits_of(f)
    local phase = F.breaker(f).phase
    if paused[f] then
      redis.call('ZREM', WAKEUPS, f)
    elseif l and l.breaker and phase ~= CLOSED then
      local b = F.breaker(f)
      b.phase = HALF
      dirty('b', f)
      local moved, left = F.unpark(f, 1)
      budget = budget - moved
      if left > 0 then
        -- Again after a cool-down: a candidate cancelled meanwhile is
        -- followed by another.
        redis.call('ZADD', WAKEUPS, later(cooldown_at(l.breaker, b.step, 0)), f)
      else
        -- Nothing left: a timer coming due is the probe.
        redis.call('ZREM', WAKEUPS, f)
      end
    else
      local most = budget
      if l and l.allowance then most = math.min(budget, l.allowance) end
      local moved, left = F.unpark(f, most)
      budget = budget - moved
      if left <= 0 then
        redis.call('ZREM', WAKEUPS, f)
      elseif l and l.allowance then
        redis.call('ZADD', WAKEUPS, later(WAKE_SPAN), f)
      end
    end
  end
end

-- Pauses (`paused`) or resumes `flow` (not empty); 1 if that changed it.
-- A resume resets the breaker and makes up to `batch` parked timers
-- pending, the rest in the claims' wake-ups.
function F.set_paused(flow, paused, batch)
  if paused then
    redis.call('ZREM', WAKEUPS, flow)
    return redis.call('HSET', PAUSED, flow, '1')
  end
  if redis.call('HDEL', PAUSED, flow) == 0 then return 0 end
  F.reset_breaker(flow)
  local _, left = F.unpark(flow, batch)
  if left > 0 then redis.call('ZADD', WAKEUPS, NOW, flow) end
  return 1
end

-- Writes the breakers, tats and permits changed.
local function flush_flows()
  local d = F.dirty
  if next(d.b) == nil and next(d.t) == nil and next(d.p) == nil then return end
  local bset, bdel, tset = {}, {}, {}
  for f in pairs(F.dirty.b) do
    local b = F.breakers[f]
    if b.phase == CLOSED and b.failures == 0 then
      bdel[#bdel + 1] = f
    else
      bset[#bset + 1], bset[#bset + 2] = f, encode_breaker(b)
    end
  end
  for f in pairs(F.dirty.t) do
    tset[#tset + 1], tset[#tset + 2] = f, string.format('%.0f', F.tats[f])
  end
  multi('HDEL', BREAKERS, bdel)
  multi('HSET', BREAKERS, bset)
  multi('HSET', TAT, tset)
  for f in pairs(F.dirty.p) do
    local p, idx = F.permits[f], INFLIGHT .. ':' .. f
    multi('ZREM', idx, p.rem)
    multi('ZADD', idx, p.add)
    multi('HDEL', PERMITS, p.gone)
    multi('HSET', PERMITS, p.took or {})
    -- The registry names the keys whose set is not empty.
    if p.n > 0 then redis.call('ZADD', INFLIGHT, 0, f) else redis.call('ZREM', INFLIGHT, f) end
    p.rem, p.add, p.gone, p.took = {}, {}, {}, nil
  end
  F.dirty = { b = {}, t = {}, p = {} }
end
flushers[#flushers + 1] = flush_flows

-- A call starts with its flow keys and nothing read or changed.
starters[#starters + 1] = function(keys)
  LIMITS, TAT, BREAKERS = keys[17], keys[18], keys[19]
  -- A flow key marked dirty is in breakers, tats or permits: a call that
  -- left these caches empty left nothing to empty (most use none).
  if F.defaults ~= nil or next(F.own) ~= nil or next(F.decoded) ~= nil
      or next(F.breakers) ~= nil or next(F.tats) ~= nil or next(F.permits) ~= nil then
    F.own, F.decoded, F.breakers, F.tats, F.permits, F.defaults = {}, {}, {}, {}, {}, nil
    F.dirty = { b = {}, t = {}, p = {} }
  end
end
