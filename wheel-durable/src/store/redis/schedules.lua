-- ARGV 4: 'get' then ids: returns {now, record or false, ...};
--         'list', the id to resume after ('' from the start), the limit:
--           returns {id, record, ...} in id order (bytes);
--         'unplanned', the limit: returns the ids marked unplanned.
local op = ARGV[4]
if op == 'get' then
  local out = { NOW }
  for i = 5, #ARGV do
    out[#out + 1] = redis.call('HGET', SCHED, ARGV[i])
  end
  return out
elseif op == 'list' then
  local from = '-'
  if ARGV[5] ~= '' then from = '(' .. ARGV[5] end
  local ids = redis.call('ZRANGEBYLEX', SIDS, from, '+', 'LIMIT', 0, tonumber(ARGV[6]))
  local out = {}
  for _, id in ipairs(ids) do
    out[#out + 1] = id
    out[#out + 1] = redis.call('HGET', SCHED, id)
  end
  return out
end
return redis.call('ZRANGEBYLEX', UNPLANNED, '-', '+', 'LIMIT', 0, tonumber(ARGV[5]))
