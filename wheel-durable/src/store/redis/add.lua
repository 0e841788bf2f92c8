-- ARGV 4: the mode ('r' replace, 'i' only if absent); 5..: (key, kind
-- 'a'|'r', due or delay, payload) for each timer. Returns 1 for each timer
-- added, 0 for each kept out by an existing one (mode 'i'), in order.
local if_absent = ARGV[4] == 'i'
local keys = {}
for i = 5, #ARGV, 4 do keys[#keys + 1] = ARGV[i] end
prefetch(timers, keys)
prefetch(deads, keys)
local out = {}
for i = 5, #ARGV, 4 do
  local key = ARGV[i]
  local old = load(key)
  if if_absent and (old or get(deads, key) or remembered(key)) then
    out[#out + 1] = 0
  else
    if old then unindex(key, old, true) end
    bury(key)
    forget(key)
    pending(key, due_of(ARGV[i + 1], ARGV[i + 2]), ARGV[i + 3], 0)
    out[#out + 1] = 1
  end
end
prune_ended(PRUNE)
return done(out)
