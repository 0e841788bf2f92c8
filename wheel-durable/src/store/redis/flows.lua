-- {namespace paused (0|1), then flow key, paused (0|1), parked count for
-- each flow key paused or with parked timers}, in no order.
local out, seen = { 0 }, {}
for _, f in ipairs(redis.call('HKEYS', PAUSED)) do
  if f == '' then
    out[1] = 1
  else
    seen[f] = true
    out[#out + 1], out[#out + 2], out[#out + 3] = f, 1, redis.call('ZCARD', parked_index(f))
  end
end
for _, f in ipairs(redis.call('ZRANGE', PFLOWS, 0, -1)) do
  if not seen[f] then
    out[#out + 1], out[#out + 2], out[#out + 3] = f, 0, redis.call('ZCARD', parked_index(f))
  end
end
return out
