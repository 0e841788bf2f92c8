//! Failed jobs are retried with exponential back-off, in async code, with
//! `Scheduler::sleep` between attempts and `Scheduler::timeout` around each
//! attempt (some attempts hang and must be cut off).
//!
//! The executor is tokio's current-thread runtime *without* its timer
//! (`enable_time` is not called): every delay comes from the `wheel`
//! scheduler, which works on any executor.
//!
//! Run: `cargo run --release -p wheel --example retry_backoff`

use std::time::{Duration, Instant};

use wheel::Scheduler;

const JOBS: u64 = 60;
const MAX_ATTEMPTS: u32 = 5;
const BASE_BACKOFF: Duration = Duration::from_millis(5);
const ATTEMPT_TIMEOUT: Duration = Duration::from_millis(20);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Attempt {
    Ok,
    Failed,
    Hung,
}

/// What attempt `n` (1-based) of job `id` does: job `id` fails its first
/// `id % 7` attempts; every third failure hangs instead of failing fast.
fn plan(id: u64, n: u32) -> Attempt {
    let failures = (id % 7) as u32;
    if n > failures {
        Attempt::Ok
    } else if (id + u64::from(n)) % 3 == 0 {
        Attempt::Hung
    } else {
        Attempt::Failed
    }
}

/// The back-off before attempt `n + 1`: 5 ms, 10 ms, 20 ms, ...
fn backoff(n: u32) -> Duration {
    BASE_BACKOFF * 2u32.pow(n - 1)
}

/// One attempt of the job: a stand-in for a network call.
async fn attempt(s: Scheduler, id: u64, n: u32) -> Result<u64, &'static str> {
    match plan(id, n) {
        Attempt::Ok => {
            s.sleep(Duration::from_millis(1)).await;
            Ok(id * 10)
        }
        Attempt::Failed => Err("connection refused"),
        Attempt::Hung => std::future::pending().await,
    }
}

struct Report {
    id: u64,
    result: Result<u64, String>,
    /// Start instant of each attempt.
    starts: Vec<Instant>,
    outcomes: Vec<Attempt>,
}

async fn run_job(s: Scheduler, id: u64) -> Report {
    let mut starts = Vec::new();
    let mut outcomes = Vec::new();
    let mut n = 1;
    let result = loop {
        starts.push(Instant::now());
        let outcome = s.timeout(ATTEMPT_TIMEOUT, attempt(s.clone(), id, n)).await;
        let error = match outcome {
            Ok(Ok(v)) => {
                outcomes.push(Attempt::Ok);
                break Ok(v);
            }
            Ok(Err(e)) => {
                outcomes.push(Attempt::Failed);
                e.to_string()
            }
            Err(elapsed) => {
                outcomes.push(Attempt::Hung);
                elapsed.to_string()
            }
        };
        if n == MAX_ATTEMPTS {
            break Err(format!("gave up after {n} attempts: {error}"));
        }
        s.sleep(backoff(n)).await;
        n += 1;
    };
    Report {
        id,
        result,
        starts,
        outcomes,
    }
}

fn main() {
    let scheduler = Scheduler::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let wall = Instant::now();
    let reports: Vec<Report> = runtime.block_on(async {
        let tasks: Vec<_> = (0..JOBS)
            .map(|id| tokio::spawn(run_job(scheduler.clone(), id)))
            .collect();
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.expect("job panicked"));
        }
        out
    });

    // Check every job against its plan and every gap against the back-off.
    let (mut succeeded, mut gave_up, mut timeouts, mut retries) = (0, 0, 0, 0);
    for r in &reports {
        let expected: Vec<Attempt> = (1..=MAX_ATTEMPTS)
            .map(|n| plan(r.id, n))
            .scan(false, |done, a| {
                if *done {
                    return None;
                }
                *done = a == Attempt::Ok;
                Some(a)
            })
            .collect();
        assert_eq!(r.outcomes, expected, "job {}", r.id);
        for (i, pair) in r.starts.windows(2).enumerate() {
            let n = i as u32 + 1;
            let mut min_gap = backoff(n);
            if r.outcomes[i] == Attempt::Hung {
                min_gap += ATTEMPT_TIMEOUT;
            }
            assert!(
                pair[1] - pair[0] >= min_gap,
                "job {} retried too early",
                r.id
            );
        }
        match &r.result {
            Ok(v) => {
                assert_eq!(*v, r.id * 10);
                succeeded += 1;
            }
            Err(_) => gave_up += 1,
        }
        timeouts += r.outcomes.iter().filter(|&&a| a == Attempt::Hung).count();
        retries += r.outcomes.len() - 1;
    }
    assert_eq!(succeeded + gave_up, JOBS as usize);
    let stats = scheduler.stats();
    assert_eq!(stats.pending, 0, "a timer outlived its future");

    println!(
        "retry_backoff: {JOBS} jobs, up to {MAX_ATTEMPTS} attempts, back-off 5/10/20/40 ms, 20 ms attempt timeout"
    );
    println!("  succeeded           : {succeeded}");
    println!("  gave up             : {gave_up}");
    println!("  retries             : {retries} (every gap >= its back-off, checked)");
    println!("  attempts timed out  : {timeouts}");
    println!(
        "  wall time           : {:.0?} (jobs run concurrently on one thread)",
        wall.elapsed()
    );
    let slow = reports
        .iter()
        .find(|r| r.result.is_err())
        .expect("some job gives up");
    let gaps: Vec<String> = slow
        .starts
        .windows(2)
        .map(|p| format!("{:.1?}", p[1] - p[0]))
        .collect();
    println!(
        "  e.g. job {}: {:?}, gaps between attempts {}: {}",
        slow.id,
        slow.outcomes,
        gaps.join(", "),
        slow.result.as_ref().unwrap_err()
    );
}
