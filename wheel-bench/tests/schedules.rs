//! The schedules section's workloads at small sizes check their own
//! output: every period of every schedule runs once, none early, and
//! every chain ends where the workload left it. The Redis half is
//! skipped without `redis-server` (unless `WHEEL_REQUIRE_REDIS=1`).

use std::time::Duration;

use wheel_bench::schedules::embedded::{self, Mode};
use wheel_bench::schedules::every_second::{self, EverySecondParams};
use wheel_bench::workloads::Check;
use wheel_testkit::{RedisServer, ServerOptions};

fn params(spread: bool) -> EverySecondParams {
    EverySecondParams {
        schedules: 40,
        window: Duration::from_secs(2),
        nodes: 3,
        grace: Duration::from_secs(5),
        spread,
    }
}

#[test]
fn every_second_on_redis_runs_each_period_once() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    for spread in [true, false] {
        let r = every_second::run_redis(&params(spread), &server.url()).unwrap();
        assert_eq!(r.check(), Check::Passed, "spread {spread}: {r:?}");
        assert_eq!(r.summary.lateness.len(), 80);
    }
}

#[test]
fn every_second_in_memory_runs_each_period_once() {
    let r = every_second::run_in_memory(&params(true)).unwrap();
    assert_eq!(r.check(), Check::Passed, "{r:?}");
    assert_eq!(r.summary.lateness.len(), 80);
}

#[test]
fn the_embedded_slot_creates_every_next_run() {
    for mode in [Mode::Live, Mode::Restart] {
        let r = embedded::run(200, mode).unwrap();
        assert_eq!(r.check(), Check::Passed, "{mode:?}: {r:?}");
        assert_eq!(r.summary.lateness.len(), 200);
        assert!(r.created_per_sec > 0.0 && r.bytes_per_schedule > 0.0);
        assert!(r.first <= r.all, "{r:?}");
    }
}
