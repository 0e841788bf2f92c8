-- ARGV 4..: (key, kind 'a'|'r', due or delay, payload) for each timer.
local keys = {}
for i = 4, #ARGV, 4 do keys[#keys + 1] = ARGV[i] end
prefetch(timers, keys)
prefetch(deads, keys)
for i = 4, #ARGV, 4 do
  local key = ARGV[i]
  local old = load(key)
  if old then unindex(key, old, true) end
  bury(key)
  pending(key, due_of(ARGV[i + 1], ARGV[i + 2]), ARGV[i + 3], 0)
end
return done(1)
