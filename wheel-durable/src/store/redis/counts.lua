-- {now, pending, claimed, dead, next due (-1: none), parked}.
return { NOW, redis.call('ZCARD', DUE), redis.call('ZCARD', LEASE),
         redis.call('HLEN', DEAD), first_score(DUE), redis.call('ZCARD', PARKQ) }
