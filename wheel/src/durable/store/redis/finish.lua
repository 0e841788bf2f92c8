-- ARGV 4: key, 5: fence, 6: 'done' | 'retry' | 'dead', 7: delay or reason.
local key = ARGV[4]
local x = load(key)
if not x or x.fence ~= tonumber(ARGV[5]) or x.state ~= RUNNING then return done(0) end
local how = ARGV[6]
if how == 'done' then
  unindex(key, x, true)
elseif how == 'retry' then
  unindex(key, x, false)
  x.state = PENDING
  x.due = later(tonumber(ARGV[7]))
  put(key, x)
else
  make_dead(key, x, ARGV[7])
end
return done(1)
