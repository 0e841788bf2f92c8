-- ARGV 4: the listing ('d' pending, 'l' claimed and running, 'q' dead,
-- 'k' parked);
-- 5: '' from the start, else the score to resume after; 6: the key to
-- resume after; 7: how many at most.
-- Returns {key, record, ...} in the sorted set's order (score, then
-- member bytes), strictly after (score, key).
local zset, hash = DUE, T
if ARGV[4] == 'l' then
  zset = LEASE
elseif ARGV[4] == 'q' then
  zset, hash = DEADQ, DEAD
elseif ARGV[4] == 'k' then
  zset = PARKQ
end

-- True if `m` sorts after `key` byte by byte, as the sorted set orders
-- members of one score (Lua's `<` on strings follows the locale).
local function after(m, key)
  if m == key then return false end
  for i = 1, math.min(#m, #key) do
    local a, b = string.byte(m, i), string.byte(key, i)
    if a ~= b then return a > b end
  end
  return #m > #key
end

local from = 0
if ARGV[5] ~= '' then
  local score, key = ARGV[5], ARGV[6]
  -- The members of `score` hold the ranks [lo, hi); find the first of
  -- them past `key` by bisection, O(log n) lookups in all.
  local lo = redis.call('ZCOUNT', zset, '-inf', '(' .. score)
  local hi = lo + redis.call('ZCOUNT', zset, score, score)
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if after(redis.call('ZRANGE', zset, mid, mid)[1], key) then hi = mid else lo = mid + 1 end
  end
  from = lo
end
local out = {}
local limit = tonumber(ARGV[7])
if limit < 1 then return out end
local keys = redis.call('ZRANGE', zset, from, from + limit - 1)
if #keys == 0 then return out end
local recs = redis.call('HMGET', hash, unpack(keys))
for i, k in ipairs(keys) do
  out[#out + 1] = k
  out[#out + 1] = recs[i]
end
return out
