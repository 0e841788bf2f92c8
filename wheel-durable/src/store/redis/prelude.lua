-- Shared by every operation of the Redis store (see docs/durable.md and
-- scripts.rs): the top level of its function library, which Redis runs
-- once, at load, or the start of each fallback script. Each call starts
-- with `begin` (at the end of this file). At load only `redis.register_*`
-- and plain Lua exist: the top level calls no `redis.call`, `struct` or
-- `cjson`, and keeps no per-call value (`begin` sets those).
-- KEYS: 1 timers hash, 2 due zset, 3 lease zset, 4 dead hash,
--       5 dead order zset, 6 fence counter (7..9: schedule.lua's),
--       10 the dedup window's memories hash, 11 their expiry zset,
--       12 paused hash (flow key -> '1'; the field '' is the namespace),
--       13 parked zset (every parked key by due), 14 parked flows hash
--       (parked key -> its flow key), 15 parked flow keys zset (score 0,
--       by bytes), 16 wake-ups zset (flow key by wake time), 17 limits hash
--       (flow key -> encoded limits; the field '' is the defaults), 18 rate
--       hash (flow key -> tat in µs), 19 breakers hash (flow key -> state),
--       20 in-flight flow keys zset (score 0, by bytes), 21 permits hash
--       (running key -> its run's fence (8 bytes) and the flow key whose
--       permit it holds); and for each flow key with parked timers,
--       KEYS[13] .. ':' .. flow, a zset of its parked keys by due, and for
--       each with permits, KEYS[20] .. ':' .. flow, a zset of its permits
--       (member: fence (8 bytes) then key, score: lease end) (same hash
--       tag, so the same slot).
-- ARGV: 1 the clock ('' = the server's TIME, else ms set by a test),
--       2 the notify window in ms, 3 the wake channel; then the script's own.
-- A timer record: due, lease_until, fence (8 bytes each), attempts (4),
-- state (1), little-endian, then first_due (8) only when the state has its
-- FIRST flag, then first_fence (8) only when it has its FIRST_FENCE flag,
-- then the payload. A dead letter: failed_at, due (8 each),
-- attempts, reason length (4 each), then first_due (8) only when the length
-- has its DEAD_FIRST flag, the reason, the payload. first_due is written
-- only when it differs from due; first_fence (the fence of the first
-- started run) only once a later claim replaced that fence (see record.rs).
--
-- A script reads the records it needs with one HMGET per hash (`prefetch`),
-- changes them in the tables below, and `flush` writes every change with
-- one multi-member command per key and kind (HSET, HDEL, ZADD, ZREM): a
-- batch of n timers costs a handful of commands, not a few per timer.

-- The call's state, set by `begin`. ARGS is the call's ARGV for the
-- functions defined here (a library has no global ARGV); an operation's
-- body names it ARGV, its callback's parameter.
local ARGS
local T, DUE, LEASE, DEAD, DEADQ, FENCE
local ENDED, ENDEDQ
local PAUSED, PARKQ, PFLOW, PFLOWS, WAKEUPS
local INFLIGHT, PERMITS
local PENDING, CLAIMED, RUNNING, PARKED = 0, 1, 2, 4
local MAX_MS = 9007199254740991 -- 2^53 - 1: exact in a double and a score
local FIRST, DEAD_FIRST = 128, 2147483648 -- the flags: first_due follows
local FIRST_FENCE = 64 -- the flag: first_fence follows
local CHUNK = 4000 -- arguments per command at most (Lua's unpack has a limit)
local NOW
local WAKE_BEFORE
-- The earliest due time of a timer made pending inside the notify window.
local wake

-- A score as ZADD's argument. A number argument is formatted with
-- '%.14g', which costs more and rounds past 14 digits; every score is
-- whole milliseconds (at most MAX_MS), so '%d' is exact.
local function score(ms)
  return string.format('%d', ms)
end

local function later(ms)
  return math.min(NOW + ms, MAX_MS)
end

local function decode_timer(r)
  if not r then return false end
  local due, lease, fence, attempts, state, at = struct.unpack('<I8I8I8I4B', r)
  local first, ffence = due, nil
  if state >= FIRST then
    state = state - FIRST
    first, at = struct.unpack('<I8', r, at)
  end
  if state >= FIRST_FENCE then
    state = state - FIRST_FENCE
    ffence, at = struct.unpack('<I8', r, at)
  end
  -- The payload stays in `raw` from `at` until asked for (`payload_of`):
  -- most calls never need it as a string of its own.
  return { due = due, first = first, lease = lease, fence = fence, attempts = attempts,
           state = state, ffence = ffence, raw = r, at = at }
end

-- A timer's payload, cut from its stored bytes on first use.
local function payload_of(x)
  local p = x.payload
  if p == nil then
    p = string.sub(x.raw, x.at)
    x.payload = p
  end
  return p
end

local function decode_dead(r)
  if not r then return false end
  local failed_at, due, attempts, len, at = struct.unpack('<I8I8I4I4', r)
  local first = due
  if len >= DEAD_FIRST then
    len = len - DEAD_FIRST
    first, at = struct.unpack('<I8', r, at)
  end
  return { failed_at = failed_at, due = due, first = first, attempts = attempts,
           reason = string.sub(r, at, at + len - 1), payload = string.sub(r, at + len) }
end

-- A record's bytes; first_due only when it differs from due, first_fence
-- only when kept.
local function encode_timer(x)
  local flags, ext = x.state, ''
  if x.first ~= x.due then
    flags = flags + FIRST
    ext = struct.pack('<I8', x.first)
  end
  if x.ffence then
    flags = flags + FIRST_FENCE
    ext = ext .. struct.pack('<I8', x.ffence)
  end
  return struct.pack('<I8I8I8I4B', x.due, x.lease, x.fence, x.attempts, flags) .. ext .. payload_of(x)
end

local function encode_dead(d)
  if d.first == d.due then
    return struct.pack('<I8I8I4I4', d.failed_at, d.due, d.attempts, #d.reason) .. d.reason .. d.payload
  end
  return struct.pack('<I8I8I4I4I8', d.failed_at, d.due, d.attempts, #d.reason + DEAD_FIRST, d.first)
    .. d.reason .. d.payload
end

-- A cache of one hash: `val[key]` is the record as the script has made it
-- (false: none), `from[key]` what the server holds (for timers: 'd' in the
-- due index, 'l' in the lease index, 'p' parked, false: none), `order` the
-- keys changed since the last flush.
local function cache(hash, decode)
  return { hash = hash, decode = decode, val = {}, from = {}, dirty = {}, order = {} }
end
local timers, deads = cache(nil, decode_timer), cache(nil, decode_dead)

-- Empties cache `c` for a call on `hash`. A key enters `from`, `dirty` or
-- `order` only once it is in `val`: an empty `val` means an empty cache,
-- and most calls leave most caches empty, so only a used one is replaced.
local function reset(c, hash)
  c.hash = hash
  if next(c.val) ~= nil then c.val, c.from, c.dirty, c.order = {}, {}, {}, {} end
end

local function index_of(x)
  if not x then return false end
  if x.state == PENDING then return 'd' end
  if x.state == PARKED then return 'p' end
  return 'l'
end

-- The flow key of each key this script parked or unparked (the record does
-- not hold it: PFLOW does, read at the flush for a key leaving the index).
local flow_of = {}

-- The parked index of one flow key.
local function parked_index(flow)
  return PARKQ .. ':' .. flow
end

-- The keys of `keys` without a value in `val`, each once, in order.
local function unread(keys, val)
  local need, seen = {}, {}
  for _, k in ipairs(keys) do
    if val[k] == nil and not seen[k] then
      seen[k] = true
      need[#need + 1] = k
    end
  end
  return need
end

-- Calls each(key, value, n) for the n-th key of `keys` in `hash`, with one
-- HMGET per CHUNK keys.
local function hmget_each(hash, keys, each)
  for i = 1, #keys, CHUNK do
    local part = { unpack(keys, i, math.min(i + CHUNK - 1, #keys)) }
    local rs = redis.call('HMGET', hash, unpack(part))
    for j, k in ipairs(part) do each(k, rs[j], i + j - 1) end
  end
end

-- Reads every key of `keys` not read yet, with one HMGET per CHUNK keys.
local function prefetch(c, keys)
  hmget_each(c.hash, unread(keys, c.val), function(k, r)
    local x = c.decode(r)
    c.val[k] = x
    if c == timers then c.from[k] = index_of(x) else c.from[k] = x and true end
  end)
end

-- Reads the timers named by ARGV[from], ARGV[from + step], ... (a batch
-- script's keys) with one HMGET per CHUNK keys.
local function prefetch_args(from, step)
  local keys = {}
  for i = from, #ARGS, step do keys[#keys + 1] = ARGS[i] end
  prefetch(timers, keys)
end

local function get(c, key)
  if c.val[key] == nil then prefetch(c, { key }) end
  local x = c.val[key]
  if not x then return nil end
  return x
end

local function touch(c, key)
  if not c.dirty[key] then
    c.dirty[key] = true
    c.order[#c.order + 1] = key
  end
end

local function load(key)
  return get(timers, key)
end

-- Sets the record and its one index entry (the old entry must be gone).
local function put(key, x)
  timers.val[key] = x
  touch(timers, key)
  if x.state == PENDING and x.due <= WAKE_BEFORE and (wake == nil or x.due < wake) then
    wake = x.due
  end
end

-- The running records a script changed: key -> the fence it ran with.
-- Every change of a record goes through `unindex`, so a run that ends by
-- any path (finish, cancel, replace, lease taken back) is here, and the
-- flush gives its permit back (`flush_permits`).
local left_running, left_order = {}, {}

local function unindex(key, x, forget)
  if x and x.state == RUNNING and not left_running[key] then
    left_running[key] = x.fence
    left_order[#left_order + 1] = key
  end
  if forget then timers.val[key] = false end
  touch(timers, key)
end

-- Removes a dead letter; returns its fields, or nil.
local function bury(key)
  local d = get(deads, key)
  if not d then return nil end
  deads.val[key] = false
  touch(deads, key)
  return d
end

local function make_dead(key, x, reason)
  unindex(key, x, true)
  deads.val[key] = { failed_at = NOW, due = x.due, first = x.first, attempts = x.attempts,
                     reason = reason, payload = payload_of(x) }
  touch(deads, key)
end

local function pending(key, due, payload, attempts)
  put(key, { due = due, first = due, lease = 0, fence = 0, attempts = attempts, state = PENDING,
             payload = payload })
end

local function due_of(kind, v)
  if kind == 'r' then return later(tonumber(v)) end
  return tonumber(v)
end

-- One command per CHUNK arguments (CHUNK is even: pairs stay together).
local function multi(cmd, key, args)
  for i = 1, #args, CHUNK do
    redis.call(cmd, key, unpack(args, i, math.min(i + CHUNK - 1, #args)))
  end
end

-- Moves the keys that left the parked state (`out`) and those that entered
-- it (`into`) between the parked indexes: the global one, PFLOW, their flow
-- key's own, and PFLOWS, which names the flow keys whose own is not empty.
-- A key's wake-up stays: a claim drops it once it finds nothing parked,
-- and a breaker's outlives its parked timers (flow_state.rs).
local function flush_parked(out, into)
  if #out == 0 and #into == 0 then return end
  local need = {}
  for _, k in ipairs(out) do
    if not flow_of[k] then need[#need + 1] = k end
  end
  hmget_each(PFLOW, need, function(k, f) flow_of[k] = f end)
  local flows, rem, add = {}, {}, {}
  local function of(f)
    if not rem[f] then
      flows[#flows + 1] = f
      rem[f], add[f] = {}, {}
    end
  end
  for _, k in ipairs(out) do
    local f = flow_of[k]
    -- A parked key always has its flow key in PFLOW; `false` only if the
    -- data were changed by hand, and then there is no own index to clean.
    if f then
      of(f)
      rem[f][#rem[f] + 1] = k
    end
  end
  multi('HDEL', PFLOW, out)
  multi('ZREM', PARKQ, out)
  local pflow, pq = {}, {}
  for _, k in ipairs(into) do
    local f, due = flow_of[k], timers.val[k].due
    of(f)
    local a = add[f]
    a[#a + 1], a[#a + 2] = due, k
    pflow[#pflow + 1], pflow[#pflow + 2] = k, f
    pq[#pq + 1], pq[#pq + 2] = due, k
  end
  multi('HSET', PFLOW, pflow)
  multi('ZADD', PARKQ, pq)
  for _, f in ipairs(flows) do
    local idx = parked_index(f)
    multi('ZREM', idx, rem[f])
    multi('ZADD', idx, add[f])
    if #add[f] > 0 then
      redis.call('ZADD', PFLOWS, 0, f)
    elseif redis.call('EXISTS', idx) == 0 then
      redis.call('ZREM', PFLOWS, f)
    end
  end
end

local function flush_timers()
  local hset, hdel = {}, {}
  local add = { d = {}, l = {} }
  local rem = { d = {}, l = {} }
  local unparked, parked = {}, {}
  for _, k in ipairs(timers.order) do
    local x, from = timers.val[k], timers.from[k]
    local to = index_of(x)
    if x then
      hset[#hset + 1] = k
      hset[#hset + 1] = encode_timer(x)
      -- A record stays parked unchanged: nothing but leaving the state
      -- rewrites a parked one, so its index entries stay right.
      if to == 'd' then
        add.d[#add.d + 1], add.d[#add.d + 2] = score(x.due), k
      elseif to == 'l' then
        add.l[#add.l + 1], add.l[#add.l + 2] = score(x.lease), k
      elseif from ~= 'p' then
        parked[#parked + 1] = k
      end
    elseif from then
      hdel[#hdel + 1] = k
    end
    if from and from ~= to then
      if from == 'p' then
        unparked[#unparked + 1] = k
      else
        local r = rem[from]
        r[#r + 1] = k
      end
    end
    timers.from[k] = to
    timers.dirty[k] = nil
  end
  timers.order = {}
  multi('HDEL', T, hdel)
  multi('ZREM', DUE, rem.d)
  multi('ZREM', LEASE, rem.l)
  multi('HSET', T, hset)
  multi('ZADD', DUE, add.d)
  multi('ZADD', LEASE, add.l)
  flush_parked(unparked, parked)
end

local function flush_deads()
  local hset, hdel, add, rem = {}, {}, {}, {}
  for _, k in ipairs(deads.order) do
    local d = deads.val[k]
    if d then
      hset[#hset + 1] = k
      hset[#hset + 1] = encode_dead(d)
      add[#add + 1] = d.failed_at
      add[#add + 1] = k
    elseif deads.from[k] then
      hdel[#hdel + 1] = k
      rem[#rem + 1] = k
    end
    deads.from[k] = d and true
    deads.dirty[k] = nil
  end
  deads.order = {}
  multi('HDEL', DEAD, hdel)
  multi('ZREM', DEADQ, rem)
  multi('HSET', DEAD, hset)
  multi('ZADD', DEADQ, add)
end

-- The flushes of caches kept by code appended after the prelude (the
-- schedule rules): `flush` runs them after the timers' and dead letters'.
local flushers = {}
-- The same for `begin`: each resets its code's per-call state, given the
-- call's KEYS.
local starters = {}

-- The permits of the runs that left the running state (or were renewed:
-- their member's score follows the lease). One EXISTS while no run holds a
-- permit.
local function flush_permits()
  if #left_order == 0 then return end
  local keys = left_order
  left_running, left_order = {}, {}
  if redis.call('EXISTS', PERMITS) == 0 then return end
  local flows, rem, add, gone = {}, {}, {}, {}
  hmget_each(PERMITS, keys, function(k, v)
    if not v then return end
    local fence, at = struct.unpack('<I8', v)
    local f, member, x = string.sub(v, at), string.sub(v, 1, 8) .. k, timers.val[k]
    if not rem[f] then
      flows[#flows + 1] = f
      rem[f], add[f] = {}, {}
    end
    if x and x.state == RUNNING and x.fence == fence then
      local a = add[f]
      a[#a + 1], a[#a + 2] = x.lease, member
    else
      rem[f][#rem[f] + 1] = member
      gone[#gone + 1] = k
    end
  end)
  multi('HDEL', PERMITS, gone)
  for _, f in ipairs(flows) do
    local idx = INFLIGHT .. ':' .. f
    multi('ZREM', idx, rem[f])
    local a = add[f]
    for i = 1, #a, CHUNK do
      redis.call('ZADD', idx, 'XX', unpack(a, i, math.min(i + CHUNK - 1, #a)))
    end
    if #rem[f] > 0 and redis.call('EXISTS', idx) == 0 then redis.call('ZREM', INFLIGHT, f) end
  end
end

-- Writes every change made so far.
local function flush()
  flush_timers()
  flush_permits()
  flush_deads()
  for _, f in ipairs(flushers) do f() end
end

local function first_score(zset)
  local e = redis.call('ZRANGE', zset, 0, 0, 'WITHSCORES')
  if #e == 0 then return -1 end
  return tonumber(e[2])
end

-- Writes the changes, announces the earliest due time made pending inside
-- the window, and returns `result`.
local function done(result)
  flush()
  if wake then redis.call('PUBLISH', ARGS[3], string.format('%d', wake)) end
  return result
end

-- The dedup window (dedup.rs): ENDED maps a key to how its timer ended (1
-- byte: 0 done, 1 cancelled, 2 dead) and when (8, little-endian), ENDEDQ
-- orders the keys by when the memory expires. A memory expired by NOW
-- answers nothing; `prune_ended` deletes the oldest expired ones.
local PRUNE = 100 -- expired memories deleted per script call, beyond those it adds
local any_ended

-- Whether any memory exists (read once per script: most namespaces have none).
local function has_ended()
  if any_ended == nil then any_ended = redis.call('ZCARD', ENDEDQ) > 0 end
  return any_ended
end

-- Whether `key` is remembered and not expired.
local function remembered(key)
  if not has_ended() then return false end
  local exp = redis.call('ZSCORE', ENDEDQ, key)
  return exp ~= false and exp ~= nil and tonumber(exp) > NOW
end

-- Deletes the memory of `key`, expired or not.
local function forget(key)
  if has_ended() and redis.call('ZREM', ENDEDQ, key) == 1 then redis.call('HDEL', ENDED, key) end
end

-- Remembers that `key`'s timer ended `how` at `at`, for `window` ms from
-- NOW; nothing for a zero window or a schedule's run.
local function remember(key, how, at, window)
  if window <= 0 or string.sub(key, 1, 6) == 'sched:' or string.sub(key, 1, 14) == 'sched-trigger:' then
    return
  end
  redis.call('HSET', ENDED, key, struct.pack('<BI8', how, at))
  redis.call('ZADD', ENDEDQ, later(window), key)
  any_ended = true
end

-- Deletes up to `limit` expired memories, oldest expiry first.
local function prune_ended(limit)
  if not has_ended() then return end
  local old = redis.call('ZRANGEBYSCORE', ENDEDQ, '-inf', NOW, 'LIMIT', 0, limit)
  if #old > 0 then
    multi('HDEL', ENDED, old)
    multi('ZREM', ENDEDQ, old)
  end
end

-- Starts a call: the key names, the clock (read once, with TIME unless a
-- test set it) and every cache and pending write empty, whatever an
-- earlier call (or one that failed half-way) left.
local function begin(keys, argv)
  ARGS = argv
  T, DUE, LEASE, DEAD, DEADQ, FENCE = keys[1], keys[2], keys[3], keys[4], keys[5], keys[6]
  ENDED, ENDEDQ = keys[10], keys[11]
  PAUSED, PARKQ, PFLOW, PFLOWS, WAKEUPS = keys[12], keys[13], keys[14], keys[15], keys[16]
  INFLIGHT, PERMITS = keys[20], keys[21]
  if argv[1] == '' then
    local t = redis.call('TIME')
    NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  else
    NOW = tonumber(argv[1])
  end
  WAKE_BEFORE = NOW + tonumber(argv[2])
  wake = nil
  reset(timers, T)
  reset(deads, DEAD)
  if next(flow_of) ~= nil then flow_of = {} end
  -- Emptied by the flush; a call that failed before it leaves them.
  if next(left_order) ~= nil then left_running, left_order = {}, {} end
  any_ended = nil
  for _, start in ipairs(starters) do start(keys) end
end
