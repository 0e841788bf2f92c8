//! What `DurableTimersBuilder::replicas` costs an add: a private Redis
//! master with one replica on loopback, and the latency of single adds
//! from one thread with and without waiting for the replica, in rounds
//! that alternate so that drift in the machine's load hits both alike.
//!
//! `cargo run --release -p wheel-durable --features redis --example replica_latency [ADDS]`

use std::time::{Duration, Instant, SystemTime};

use wheel_durable::{DurableError, DurableTimers};
use wheel_testkit::{RedisServer, ServerOptions};

/// Adds `n` timers through `t`; each add's latency in microseconds.
fn adds(t: &DurableTimers, prefix: &str, n: usize) -> Result<Vec<u128>, DurableError> {
    let due = SystemTime::now() + Duration::from_secs(24 * 3600);
    let mut took = Vec::with_capacity(n);
    for i in 0..n {
        let started = Instant::now();
        t.add_at(&format!("{prefix}{i}"), due, b"payload")?;
        took.push(started.elapsed().as_micros());
    }
    Ok(took)
}

fn line(name: &str, mut us: Vec<u128>) {
    us.sort_unstable();
    let at = |q: f64| us[((us.len() - 1) as f64 * q) as usize];
    let mean = us.iter().sum::<u128>() / us.len() as u128;
    println!(
        "{name:<22} {:>7} adds  mean {mean:>4} µs  p50 {:>4} µs  p99 {:>5} µs",
        us.len(),
        at(0.5),
        at(0.99)
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args().nth(1).map_or(Ok(5_000), |a| a.parse())?;
    if n < 4 {
        return Err("ADDS must be at least 4: the adds are measured in 4 rounds".into());
    }
    let master = RedisServer::start(ServerOptions::default())?;
    let _replica = RedisServer::replica_of(&master)?;
    let plain = DurableTimers::builder().redis(&master.url()).build()?;
    let waiting = DurableTimers::builder()
        .redis(&master.url())
        .replicas(1, Duration::from_secs(1))
        .build()?;
    adds(&plain, "warm-a", 500)?;
    adds(&waiting, "warm-b", 500)?;
    let (mut without, mut with) = (Vec::new(), Vec::new());
    for round in 0..4 {
        without.extend(adds(&plain, &format!("a{round}-"), n / 4)?);
        with.extend(adds(&waiting, &format!("b{round}-"), n / 4)?);
    }
    line("without replicas", without);
    line("replicas(1, 1s)", with);
    Ok(())
}
