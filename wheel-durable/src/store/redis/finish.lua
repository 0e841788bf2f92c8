-- ARGV 4: the dedup window; 5..: (key, fence, 'done' | 'retry' | 'dead',
-- delay or reason, flow key or '', class: '' none, 's' success, 'n'
-- neutral, 'f' failure, then a failure's Retry-After in ms, 0: none) for
-- each run. 1 for each recorded.
local window = tonumber(ARGV[4])
prefetch_args(5, 7)
prefetch_links(5, 7)
-- The limits of the flow keys named with an outcome, with one HMGET.
local flows = {}
for i = 9, #ARGV, 7 do
  if ARGV[i + 1] ~= '' and ARGV[i] ~= '' then flows[#flows + 1] = ARGV[i] end
end
if #flows > 0 then F.load_limits(flows) end
-- Before this call's own memories: none of them can have expired.
prune_ended(PRUNE + (#ARGV - 4) / 7)
local out = {}
for i = 5, #ARGV, 7 do
  local key, how = ARGV[i], ARGV[i + 2]
  local x = load(key)
  if not x or x.fence ~= tonumber(ARGV[i + 1]) or x.state ~= RUNNING then
    out[#out + 1] = 0
  else
    if ARGV[i + 5] ~= '' then
      F.finished(key, x.fence, ARGV[i + 4], ARGV[i + 5], tonumber(ARGV[i + 6]))
    end
    if how == 'done' then
      unindex(key, x, true)
      remember(key, 0, NOW, window)
    elseif how == 'retry' then
      unindex(key, x, false)
      x.state = PENDING
      x.due = later(tonumber(ARGV[i + 3]))
      put(key, x)
    else
      make_dead(key, x, ARGV[i + 3])
    end
    sched_on_finish(key, how)
    out[#out + 1] = 1
  end
end
return done(out)
