-- Shared by every script of the Redis store (see docs/durable.md).
-- KEYS: 1 timers hash, 2 due zset, 3 lease zset, 4 dead hash,
--       5 dead order zset, 6 fence counter.
-- ARGV: 1 the clock ('' = the server's TIME, else ms set by a test),
--       2 the notify window in ms, 3 the wake channel; then the script's own.
-- A timer record: due, lease_until, fence (8 bytes each), attempts (4),
-- state (1), little-endian, then the payload. A dead letter: failed_at,
-- due (8 each), attempts, reason length (4 each), the reason, the payload.
local T, DUE, LEASE, DEAD, DEADQ, FENCE = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local PENDING, CLAIMED, RUNNING = 0, 1, 2
local MAX_MS = 9007199254740991 -- 2^53 - 1: exact in a double and a score
local NOW
if ARGV[1] == '' then
  local t = redis.call('TIME')
  NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  NOW = tonumber(ARGV[1])
end
local WAKE_BEFORE = NOW + tonumber(ARGV[2])
local wake = false

local function later(ms)
  return math.min(NOW + ms, MAX_MS)
end

local function load(key)
  local r = redis.call('HGET', T, key)
  if not r then return nil end
  local due, lease, fence, attempts, state = struct.unpack('<I8I8I8I4B', r)
  return { due = due, lease = lease, fence = fence, attempts = attempts,
           state = state, payload = string.sub(r, 30) }
end

-- Writes the record and its one index entry (the old entry must be gone).
local function put(key, x)
  redis.call('HSET', T, key,
    struct.pack('<I8I8I8I4B', x.due, x.lease, x.fence, x.attempts, x.state) .. x.payload)
  if x.state == PENDING then
    redis.call('ZADD', DUE, x.due, key)
    if x.due <= WAKE_BEFORE then wake = true end
  else
    redis.call('ZADD', LEASE, x.lease, key)
  end
end

local function unindex(key, x, forget)
  if x.state == PENDING then redis.call('ZREM', DUE, key) else redis.call('ZREM', LEASE, key) end
  if forget then redis.call('HDEL', T, key) end
end

-- Removes a dead letter; returns its fields, or nil.
local function bury(key)
  local r = redis.call('HGET', DEAD, key)
  if not r then return nil end
  redis.call('HDEL', DEAD, key)
  redis.call('ZREM', DEADQ, key)
  local failed_at, due, attempts, len = struct.unpack('<I8I8I4I4', r)
  return { due = due, attempts = attempts, payload = string.sub(r, 25 + len) }
end

local function make_dead(key, x, reason)
  unindex(key, x, true)
  redis.call('HSET', DEAD, key,
    struct.pack('<I8I8I4I4', NOW, x.due, x.attempts, #reason) .. reason .. x.payload)
  redis.call('ZADD', DEADQ, NOW, key)
end

local function pending(key, due, payload, attempts)
  put(key, { due = due, lease = 0, fence = 0, attempts = attempts, state = PENDING, payload = payload })
end

local function due_of(kind, v)
  if kind == 'r' then return later(tonumber(v)) end
  return tonumber(v)
end

local function first_score(zset)
  local e = redis.call('ZRANGE', zset, 0, 0, 'WITHSCORES')
  if #e == 0 then return -1 end
  return tonumber(e[2])
end

local function done(result)
  if wake then redis.call('PUBLISH', ARGV[3], '') end
  return result
end
