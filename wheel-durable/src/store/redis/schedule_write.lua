-- ARGV 4: the schedule id; 5: the operation; then its arguments:
--   upsert: expected generation ('' = the id must be free), definition,
--           overlap byte, payload, then the first run's key, due time and
--           nominal time ('', '', '' for none);
--   pause, delete, trigger: none; resume, replan: the chain step.
-- Returns {answer} or {'triggered', key}; answers: created, changed,
-- unchanged, notfound, conflict.
local id, op = ARGV[4], ARGV[5]
local s = load_sched(id)

local function upsert()
  local expect = ARGV[6]
  if (expect == '') ~= (s == nil) then return 'conflict' end
  if s and tonumber(expect) ~= s.gen then return 'conflict' end
  local def, overlap, payload, first_key, first_due = ARGV[7], tonumber(ARGV[8]), ARGV[9],
    ARGV[10], ARGV[11]
  local created = s == nil
  if s and s.def == def and s.payload == payload then return 'unchanged' end
  s = s or { gen = 0, runs = 0, sm = 0, so = 0, sp = 0, paused = false, unplanned = false,
             last = false, running = false, buffered = false, next = false }
  cancel_unstarted(s.next)
  s.gen = s.gen + 1
  s.def, s.overlap, s.payload = def, overlap, payload
  s.runs, s.last, s.next, s.unplanned = 0, false, false, false
  if not s.paused and first_key ~= '' then
    s.runs = 1
    s.last = tonumber(ARGV[12])
    if add_run(first_key, tonumber(first_due), payload) then
      s.next = first_key
    else
      s.unplanned = true
    end
  end
  put_sched(id, s)
  if created then return 'created' end
  return 'changed'
end

local function planned(resume)
  local a = decode_advance(ARGV[6])
  if a.gen ~= s.gen then return 'conflict' end
  local missed = s.sm
  apply(s, a)
  if resume then
    s.sp = s.sp + (s.sm - missed)
    s.sm = missed
    s.paused = false
  end
  s.gen = s.gen + 1
  put_sched(id, s)
  return 'changed'
end

local answer
if op == 'upsert' then
  answer = upsert()
elseif not s then
  answer = 'notfound'
elseif op == 'pause' then
  if s.paused then
    answer = 'unchanged'
  else
    if cancel_unstarted(s.next) then s.sp = s.sp + 1 end
    s.next, s.paused, s.unplanned = false, true, false
    s.gen = s.gen + 1
    put_sched(id, s)
    answer = 'changed'
  end
elseif op == 'resume' then
  if not s.paused then answer = 'unchanged' else answer = planned(true) end
elseif op == 'replan' then
  if s.paused or not s.unplanned then answer = 'unchanged' else answer = planned(false) end
elseif op == 'delete' then
  cancel_unstarted(s.next)
  cancel_unstarted(s.buffered)
  drop_sched(id)
  answer = 'changed'
elseif op == 'trigger' then
  local key = 'sched-trigger:' .. id .. ':' .. string.format('%d', NOW)
  add_run(key, NOW, s.payload)
  return done({ 'triggered', key })
end
return done({ answer })
