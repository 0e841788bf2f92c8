-- ARGV 4: the dedup window; 5..: (key, fence, 'done' | 'retry' | 'dead',
-- delay or reason) for each run. 1 for each recorded.
local window = tonumber(ARGV[4])
prefetch_args(5, 4)
prefetch_links(5, 4)
-- Before this call's own memories: none of them can have expired.
prune_ended(PRUNE + (#ARGV - 4) / 4)
local out = {}
for i = 5, #ARGV, 4 do
  local key, how = ARGV[i], ARGV[i + 2]
  local x = load(key)
  if not x or x.fence ~= tonumber(ARGV[i + 1]) or x.state ~= RUNNING then
    out[#out + 1] = 0
  else
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
