-- The schedule rules (store/schedule_steps.rs, the same rules in Lua),
-- appended to the prelude for the scripts that touch schedules.
-- KEYS: 7 schedules hash (id -> record), 8 ids zset (score 0, by bytes),
--       9 unplanned zset (score 0: the ids of records marked unplanned).
-- A schedule record (store/schedules.rs): generation, last nominal time,
-- runs created, skipped missed, overlap and paused (8 bytes each), flags
-- (1: paused, 2: unplanned, 4: a last nominal time is set), the overlap
-- byte (0 skip, 1 buffer one, 2 allow), then the definition, the payload,
-- the next, running and buffered keys, each a u32 length (0xFFFFFFFF: none)
-- and its bytes. Every integer little-endian.
local SCHED, SIDS, UNPLANNED
local NONE = 4294967295

local function canonical(ms)
  if ms == '' or not string.match(ms, '^%d+$') then return nil end
  if #ms > 1 and string.sub(ms, 1, 1) == '0' then return nil end
  local n = tonumber(ms)
  if #ms > 16 or n > MAX_MS then return nil end
  return n
end

-- The owners of the run keys seen so far (a key's owner is asked for
-- several times per script): `owner_id[key]` the id (false: none),
-- `owner_chain[key]` whether a chain run.
local owner_id, owner_chain = {}, {}

-- The schedule id of a run key, and whether it is a chain run.
local function owner(key)
  -- Most keys are no schedule's: one byte tells, with no string made.
  if string.byte(key, 1) ~= 115 then return nil end -- 's'
  local id = owner_id[key]
  if id ~= nil then
    if not id then return nil end
    return id, owner_chain[key]
  end
  local rest, chain
  if string.sub(key, 1, 6) == 'sched:' then
    rest, chain = string.sub(key, 7), true
  elseif string.sub(key, 1, 14) == 'sched-trigger:' then
    rest, chain = string.sub(key, 15), false
  else
    owner_id[key] = false
    return nil
  end
  local ms
  id, ms = string.match(rest, '^(.*):([^:]*)$')
  if not id or id == '' or not canonical(ms) or (chain and #id > 512) then
    owner_id[key] = false
    return nil
  end
  owner_id[key], owner_chain[key] = id, chain
  return id, chain
end

-- A length-prefixed field at `at` (false for none), and the position after it.
local function optional(r, at)
  local len
  len, at = struct.unpack('<I4', r, at)
  if len == NONE then return false, at end
  return string.sub(r, at, at + len - 1), at + len
end

-- struct.pack('<I4', NONE), written out: a function library's top level,
-- run at load, cannot reach `struct`.
local NONE_FIELD = '\255\255\255\255'

local function encode_optional(v)
  if not v then return NONE_FIELD end
  return struct.pack('<I4', #v) .. v
end

-- The definition and the payload are always present: one unpack reads
-- the fixed fields and both (`c0` takes its length from the field before).
local function decode_sched(r)
  if not r then return nil end
  local gen, last, runs, sm, so, sp, flags, overlap, def, payload, at =
    struct.unpack('<I8I8I8I8I8I8BBI4c0I4c0', r)
  local s = { gen = gen, runs = runs, sm = sm, so = so, sp = sp, overlap = overlap,
              paused = flags % 2 == 1, unplanned = math.floor(flags / 2) % 2 == 1,
              def = def, payload = payload }
  if math.floor(flags / 4) % 2 == 1 then s.last = last else s.last = false end
  s.next, at = optional(r, at)
  s.running, at = optional(r, at)
  s.buffered = optional(r, at)
  return s
end

local function encode_sched(s)
  local flags = 0
  if s.paused then flags = flags + 1 end
  if s.unplanned then flags = flags + 2 end
  if s.last then flags = flags + 4 end
  return struct.pack('<I8I8I8I8I8I8BBI4c0I4c0', s.gen, s.last or 0, s.runs, s.sm, s.so, s.sp,
                     flags, s.overlap, #s.def, s.def, #s.payload, s.payload)
    .. encode_optional(s.next) .. encode_optional(s.running) .. encode_optional(s.buffered)
end

-- The schedule records read so far: `val[id]` the record as the script
-- has made it (false: none), `had[id]` whether the server holds one,
-- `unpl[id]` whether its id is in the unplanned set, `order` the ids
-- changed since the last flush. A record exists iff its id is in SIDS and
-- is marked unplanned iff its id is in UNPLANNED, so the flush touches
-- those sets only when that changes.
local scheds = { val = {}, had = {}, unpl = {}, dirty = {}, order = {} }

-- Reads every record of `ids` not read yet, with one HMGET per CHUNK ids.
local function prefetch_scheds(ids)
  hmget_each(SCHED, unread(ids, scheds.val), function(id, r)
    local s = decode_sched(r) or false
    scheds.val[id] = s
    scheds.had[id] = s and true
    scheds.unpl[id] = s and s.unplanned
  end)
end

local function load_sched(id)
  if scheds.val[id] == nil then prefetch_scheds({ id }) end
  return scheds.val[id] or nil
end

local function put_sched(id, s)
  scheds.val[id] = s
  touch(scheds, id)
end

local function drop_sched(id)
  load_sched(id)
  scheds.val[id] = false
  touch(scheds, id)
end

local function flush_scheds()
  local hset, hdel, add_ids, rem_ids, add_unpl, rem_unpl = {}, {}, {}, {}, {}, {}
  for _, id in ipairs(scheds.order) do
    local s = scheds.val[id]
    local unpl = s and s.unplanned or false
    if s then
      hset[#hset + 1] = id
      hset[#hset + 1] = encode_sched(s)
      if not scheds.had[id] then
        add_ids[#add_ids + 1] = 0
        add_ids[#add_ids + 1] = id
      end
    elseif scheds.had[id] then
      hdel[#hdel + 1] = id
      rem_ids[#rem_ids + 1] = id
    end
    if unpl and not scheds.unpl[id] then
      add_unpl[#add_unpl + 1] = 0
      add_unpl[#add_unpl + 1] = id
    elseif scheds.unpl[id] and not unpl then
      rem_unpl[#rem_unpl + 1] = id
    end
    scheds.had[id] = s and true
    scheds.unpl[id] = unpl
    scheds.dirty[id] = nil
  end
  scheds.order = {}
  multi('HDEL', SCHED, hdel)
  multi('ZREM', SIDS, rem_ids)
  multi('ZREM', UNPLANNED, rem_unpl)
  multi('HSET', SCHED, hset)
  multi('ZADD', SIDS, add_ids)
  multi('ZADD', UNPLANNED, add_unpl)
end
flushers[#flushers + 1] = flush_scheds

-- Reads the records of the schedules owning the run keys ARGV[from],
-- ARGV[from + step], ... and the timers their overlap rule looks at
-- (running and buffered runs), one HMGET per hash.
local function prefetch_owners(from, step)
  local ids, keys = {}, {}
  for i = from, #ARGS, step do
    local id = owner(ARGS[i])
    if id then ids[#ids + 1] = id end
  end
  prefetch_scheds(ids)
  for _, id in ipairs(ids) do
    local s = scheds.val[id]
    if s then
      if s.running then keys[#keys + 1] = s.running end
      if s.buffered then keys[#keys + 1] = s.buffered end
    end
  end
  prefetch(timers, keys)
end

local function add_run(key, due, payload)
  if load(key) or get(deads, key) then return false end
  pending(key, due, payload, 0)
  return true
end

local function remove_run(key)
  local x = load(key)
  if x then unindex(key, x, true) end
end

local function set_due(key, due)
  local x = load(key)
  if not x then return end
  unindex(key, x, false)
  x.state = PENDING
  x.due = due
  put(key, x)
end

-- Removes a run unless it started; true if it removed one.
local function cancel_unstarted(key)
  if not key then return false end
  local x = load(key)
  if x and x.state ~= RUNNING then
    unindex(key, x, true)
    return true
  end
  return false
end

-- A chain step as the node encodes it (store/redis/schedules.rs): nil for ''.
local function decode_advance(b)
  if b == '' then return nil end
  local gen, run_this, has_last, last, runs, skipped, n, at =
    struct.unpack('<I8BBI8I8I8I4', b)
  local a = { gen = gen, run_this = run_this == 1, runs = runs, skipped = skipped,
              create = {} }
  if has_last == 1 then a.last = last else a.last = false end
  local function run()
    local len, due
    len, at = struct.unpack('<I4', b, at)
    local key = string.sub(b, at, at + len - 1)
    due, at = struct.unpack('<I8', b, at + len)
    return { key = key, due = due }
  end
  for _ = 1, n do a.create[#a.create + 1] = run() end
  local has_pending
  has_pending, at = struct.unpack('B', b, at)
  if has_pending == 1 then a.pending = run() end
  return a
end

-- Decodes the chain steps ARGV[from], ARGV[from + step], ... (indexed by
-- argument position) and reads the timers and dead letters they may
-- create, one HMGET per hash.
local function decode_steps(from, step)
  local steps, keys = {}, {}
  for i = from, #ARGS, step do
    local a = decode_advance(ARGS[i])
    steps[i] = a
    if a then
      for _, r in ipairs(a.create) do keys[#keys + 1] = r.key end
      if a.pending then keys[#keys + 1] = a.pending.key end
    end
  end
  prefetch(timers, keys)
  prefetch(deads, keys)
  return steps
end

local function apply(s, a)
  for _, r in ipairs(a.create) do add_run(r.key, r.due, s.payload) end
  if a.pending then
    add_run(a.pending.key, a.pending.due, s.payload)
    s.next = a.pending.key
  else
    s.next = false
  end
  s.last, s.runs = a.last, a.runs
  s.sm = s.sm + a.skipped
  s.unplanned = false
end

-- The overlap rule for `key` about to start: true to start it.
local function overlap_gate(s, key)
  local busy = nil
  if s.running and s.running ~= key then busy = load(s.running) end
  if busy then
    local parked = s.buffered and s.buffered ~= key and load(s.buffered)
    if s.overlap == 2 then
      -- Allow: starts.
    elseif s.overlap == 1 and not parked then
      local until_ = busy.lease
      if busy.state == PENDING then until_ = busy.due end
      set_due(key, math.max(until_, NOW + 1))
      s.buffered = key
      return false
    else
      remove_run(key)
      s.so = s.so + 1
      return false
    end
  end
  s.running = key
  if s.buffered == key then s.buffered = false end
  return true
end

-- The schedule rules of `start` for `key`, claimed with its fence and due.
local function start_gate(key, advance)
  local id, chain = owner(key)
  if not id then return true end
  local s = load_sched(id)
  if not s then
    remove_run(key)
    return false
  end
  if chain and s.paused then
    remove_run(key)
    s.sp = s.sp + 1
    put_sched(id, s)
    return false
  end
  if chain and s.next == key then
    if advance and advance.gen == s.gen then
      apply(s, advance)
      if not advance.run_this then
        remove_run(key)
        put_sched(id, s)
        return false
      end
    else
      s.next = false
      s.unplanned = true
    end
  end
  local go = overlap_gate(s, key)
  put_sched(id, s)
  return go
end

-- The running and buffered runs of each schedule read for finishes
-- (`links[id]` = { running, buffered }, false: no record): a finish needs
-- no more, so the rest of the record is skipped, not decoded.
local links = {}

-- The running and buffered runs of record `r`: past the fixed fields (50
-- bytes), the definition and the payload, and the next run.
local function links_of(r)
  if not r then return false end
  local len, at = struct.unpack('<I4', r, 51)
  len, at = struct.unpack('<I4', r, at + len)
  len, at = struct.unpack('<I4', r, at + len)
  if len ~= NONE then at = at + len end
  local running, buffered
  running, at = optional(r, at)
  buffered = optional(r, at)
  return { running, buffered }
end

-- Reads the links of the schedules owning the run keys ARGV[from],
-- ARGV[from + step], ..., and their buffered runs, one HMGET per hash.
local function prefetch_links(from, step)
  local ids, seen, keys = {}, {}, {}
  for i = from, #ARGS, step do
    local id = owner(ARGS[i])
    if id and not seen[id] then
      seen[id] = true
      ids[#ids + 1] = id
    end
  end
  hmget_each(SCHED, ids, function(id, r)
    local l = links_of(r)
    links[id] = l
    if l and l[2] then keys[#keys + 1] = l[2] end
  end)
  prefetch(timers, keys)
end

-- The schedule rules of a recorded finish ('done', 'retry' or 'dead'),
-- after `prefetch_links` for its key.
local function sched_on_finish(key, how)
  if how == 'retry' then return end
  local id = owner(key)
  if not id then return end
  local l = links[id]
  -- The finished run stays the record's last run: its key without a
  -- timer makes no run busy.
  if not l or l[1] ~= key then return end
  local buffered = l[2]
  if buffered then
    local b = load(buffered)
    if b and b.state == PENDING then set_due(buffered, NOW) end
  end
end

-- The schedule rules of a cancel that removed `key`.
local function sched_on_cancel(key)
  local id, chain = owner(key)
  if not id or not chain then return end
  local s = load_sched(id)
  if s and s.next == key then
    s.next = false
    s.unplanned = true
    put_sched(id, s)
  end
end

-- A call starts with its schedule keys and nothing read or changed.
starters[#starters + 1] = function(keys)
  SCHED, SIDS, UNPLANNED = keys[7], keys[8], keys[9]
  -- owner_chain is filled with owner_id, and an id enters scheds' other
  -- tables only once in scheds.val: a call that left these three empty
  -- left all empty (most calls touch no schedule).
  if next(owner_id) ~= nil or next(links) ~= nil or next(scheds.val) ~= nil then
    owner_id, owner_chain, links = {}, {}, {}
    scheds = { val = {}, had = {}, unpl = {}, dirty = {}, order = {} }
  end
end
