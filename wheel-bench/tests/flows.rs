//! The flows section's workloads at small sizes check their own output:
//! every callback arrives once, none before its due time, none over its
//! flow key's rate; every dead letter is replayed once, on pace. Skipped
//! without `redis-server` (unless `WHEEL_REQUIRE_REDIS=1`).

use std::time::Duration;

use wheel_bench::durable::flow_cost::{self, FlowCostParams, Limit};
use wheel_bench::durable::flush;
use wheel_bench::durable::ours::Store;
use wheel_bench::durable::replay::{self, ReplayParams};
use wheel_bench::workloads::Check;
use wheel_testkit::{RedisServer, ServerOptions};

#[test]
fn each_case_sends_every_callback_once_and_none_early() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let p = FlowCostParams {
        n: 200,
        offered: 200,
        nodes: 3,
        bound: Duration::from_secs(10),
    };
    for limit in Limit::ALL {
        flush(&server.url()).unwrap();
        let r = flow_cost::run(&server.url(), &p, limit).unwrap();
        assert_eq!(r.check(), Check::Passed, "{limit:?}: {r:?}");
        assert_eq!(r.tally.received, 200, "{limit:?}");
        assert!(r.redis_cpu_s.is_some() && r.node_cpu.is_some(), "{r:?}");
    }
}

#[test]
fn dead_letters_on_redis_are_replayed_once_on_pace() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let p = ReplayParams { n: 30, rate: 100.0 };
    let r = replay::run(&Store::Redis(server.url()), &p).unwrap();
    assert_eq!(r.check(p.n), Check::Passed, "{r:?}");
    assert_eq!(r.revived, 30);
}
