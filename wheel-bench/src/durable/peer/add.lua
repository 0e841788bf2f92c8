-- Adds a task to its minute's sorted set, scored by its due second, and
-- takes its key out of the minute's deleted set (a re-add after a remove).
-- KEYS[1]: the minute's tasks, KEYS[2]: the minute's deleted keys.
-- ARGV[1]: due, whole seconds; ARGV[2]: the task; ARGV[3]: its key.
redis.call('SREM', KEYS[2], ARGV[3])
return redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
