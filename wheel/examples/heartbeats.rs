//! 200 000 connections, each with a 30 s idle timeout that every heartbeat
//! pushes back with `TimerHandle::reset`. Some connections go silent and
//! must be reported exactly when their timeout passes — not before, not
//! after — and no live connection may ever be reported.
//!
//! Time is a `ManualClock` stepped one second at a time, so "exactly" is
//! checkable; the run prints the process's CPU time and memory.
//!
//! Run: `cargo run --release -p wheel --example heartbeats`

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use wheel::{ManualClock, Scheduler, TimerHandle};

const CONNECTIONS: usize = 200_000;
const IDLE_TIMEOUT_S: u64 = 30;
const HEARTBEAT_EVERY_S: u64 = 10;
const SIMULATED_S: u64 = 120;
/// One connection in this many goes silent at some point.
const SILENT_ONE_IN: u64 = 50;

fn main() {
    let wall = Instant::now();
    let clock = ManualClock::new();
    let start = clock.now();
    let scheduler = Scheduler::builder()
        .clock(clock.clone())
        .tick(Duration::from_millis(10))
        .build()
        .expect("valid settings");

    // (connection, seconds after start) of every idle report.
    let reports = Arc::new(Mutex::new(Vec::new()));
    let reported = Arc::new(AtomicUsize::new(0));

    let mut x: u64 = 0xD1B5_4A32_D192_ED03;
    let mut rand = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    // When each connection stops sending heartbeats (u64::MAX: never).
    let silent_at: Vec<u64> = (0..CONNECTIONS)
        .map(|_| {
            if rand() % SILENT_ONE_IN == 0 {
                rand() % (SIMULATED_S - IDLE_TIMEOUT_S)
            } else {
                u64::MAX
            }
        })
        .collect();

    let handles: Vec<TimerHandle> = (0..CONNECTIONS)
        .map(|id| {
            let (reports, reported, clock) =
                (Arc::clone(&reports), Arc::clone(&reported), clock.clone());
            scheduler
                .schedule(Duration::from_secs(IDLE_TIMEOUT_S), move || {
                    let at = (clock.now() - start).as_secs();
                    reports.lock().unwrap().push((id, at));
                    reported.fetch_add(1, Ordering::SeqCst);
                })
                .expect("scheduler running")
        })
        .collect();

    let mut last_heartbeat = vec![0u64; CONNECTIONS];
    let mut resets = 0u64;
    let mut expected_by = vec![0usize; SIMULATED_S as usize + 1];
    for (id, &silent) in silent_at.iter().enumerate() {
        // Heartbeats at phase, phase + 10 s, ... while not silent.
        let phase = id as u64 % HEARTBEAT_EVERY_S;
        if silent != u64::MAX {
            let last = if silent <= phase {
                0
            } else {
                phase + (silent - 1 - phase) / HEARTBEAT_EVERY_S * HEARTBEAT_EVERY_S
            };
            let due = last + IDLE_TIMEOUT_S;
            if due <= SIMULATED_S {
                expected_by[due as usize] += 1;
            }
        }
    }
    let mut expected_so_far = 0;
    for t in 1..=SIMULATED_S {
        clock.advance(Duration::from_secs(1));
        // Wait (real time, generously) until this second's reports are in.
        expected_so_far += expected_by[t as usize];
        let give_up = Instant::now() + Duration::from_secs(20);
        while reported.load(Ordering::SeqCst) < expected_so_far {
            assert!(Instant::now() < give_up, "idle reports missing at {t} s");
            thread::yield_now();
        }
        // Live connections send their heartbeat for this second.
        for (id, h) in handles.iter().enumerate() {
            let phase = id as u64 % HEARTBEAT_EVERY_S;
            if t >= phase && (t - phase) % HEARTBEAT_EVERY_S == 0 && t < silent_at[id] {
                assert!(
                    h.reset(Duration::from_secs(IDLE_TIMEOUT_S)),
                    "{id} timed out while alive"
                );
                last_heartbeat[id] = t;
                resets += 1;
            }
        }
    }

    // Check every report against the heartbeat history.
    let reports = reports.lock().unwrap();
    assert_eq!(
        reports.len(),
        expected_so_far,
        "wrong number of idle reports"
    );
    let mut seen = vec![false; CONNECTIONS];
    for &(id, at) in reports.iter() {
        assert!(!seen[id], "connection {id} reported twice");
        seen[id] = true;
        assert!(silent_at[id] != u64::MAX, "live connection {id} reported");
        assert_eq!(
            at,
            last_heartbeat[id] + IDLE_TIMEOUT_S,
            "connection {id} reported at {at} s"
        );
    }
    let still_pending = scheduler.stats().pending;
    assert_eq!(still_pending, CONNECTIONS - reports.len());

    let silent = silent_at.iter().filter(|&&s| s != u64::MAX).count();
    println!(
        "heartbeats: {CONNECTIONS} connections, {IDLE_TIMEOUT_S} s idle timeout, heartbeat every {HEARTBEAT_EVERY_S} s, {SIMULATED_S} simulated s"
    );
    println!("  heartbeats (TimerHandle::reset)  : {resets}");
    println!("  connections that went silent     : {silent}");
    println!(
        "  reported idle, each exactly {IDLE_TIMEOUT_S} s after its last heartbeat: {}",
        reports.len()
    );
    println!("  timers still pending (live)      : {still_pending}");
    println!(
        "  wall time                        : {:.2?}",
        wall.elapsed()
    );
    match (cpu_time(), memory_kib()) {
        (Some(cpu), Some((rss, peak))) => {
            println!("  process CPU time (user + system) : {cpu:.2?}");
            println!(
                "  memory: VmRSS {} MiB, peak VmHWM {} MiB",
                rss / 1024,
                peak / 1024
            );
        }
        _ => println!("  CPU time and memory: /proc not available on this system"),
    }
}

/// User + system CPU time of this process, from `/proc/self/stat`
/// (fields 14 and 15, in clock ticks of 1/100 s, the Linux default).
fn cpu_time() -> Option<Duration> {
    const TICKS_PER_SECOND: u64 = 100;
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses; the first of
    // them is field 3.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(Duration::from_millis(
        (utime + stime) * 1000 / TICKS_PER_SECOND,
    ))
}

/// Resident and peak resident memory in KiB, from `/proc/self/status`.
fn memory_kib() -> Option<(u64, u64)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        line.split_whitespace().nth(1)?.parse().ok()
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}
