//! Two servers on one Redis, sending callbacks to the HTTP section's
//! loopback receiver ([`receiver`]): timers due evenly at a rate, added
//! through the API ahead of time in batches of [`ADD_BATCH`], every other
//! batch to the other server, keyed `t` + index (so that the receiver's
//! record reads as the HTTP section's, [`Tally`]). Lateness is a callback's
//! arrival minus its requested due time.
//!
//! With a kill, the second server gets SIGKILL at `kill_after` past the
//! first due time; the run then waits until the later of the last due
//! time and the kill plus a lease (the servers' `--lease`),
//! plus a second and `bound`. The timers it held come back when their
//! lease ends, through the other server: the latest arrival says how long
//! that took. A request it had sent just before dying may be sent again
//! by the other server, with a new `Wheel-Fence`: at-least-once, counted
//! as duplicates of a new fence, not a failure; a duplicate of the same
//! fence is one.

use std::net::SocketAddr;
use std::time::{Duration, SystemTime};

use super::process::{Backend, ServerProcess};
use super::{SERVER_LEASE, Workdir, client};
use crate::durable::http::tally::Tally;
use crate::durable::http::{callback_url, receiver};
use crate::durable::{key, spread, unix_ns};
use crate::workloads::Check;

/// Timers per batch request of the adds.
pub const ADD_BATCH: usize = 250;

/// One run's setting.
#[derive(Debug, Clone)]
pub struct FleetParams {
    /// Timers due per second.
    pub rate: u64,
    /// How long timers keep coming due.
    pub window: Duration,
    /// From the adding's start to the first due time.
    pub lead: Duration,
    /// How long after the last due time (or the lease's end after a
    /// kill) a callback may arrive before it counts as lost.
    pub bound: Duration,
    /// Kill the second server this long after the first due time.
    pub kill_after: Option<Duration>,
}

impl FleetParams {
    /// Timers in the run.
    pub fn timers(&self) -> usize {
        (self.rate as f64 * self.window.as_secs_f64()).round() as usize
    }
}

/// What one run measured.
#[derive(Debug, Clone)]
pub struct FleetRun {
    /// The receiver's record against the due times.
    pub tally: Tally,
    /// How long the adds took.
    pub adding: Duration,
    /// When the second server died, after the first due time.
    pub killed_at: Option<Duration>,
}

impl FleetRun {
    /// The latest first arrival minus its due time, ms.
    pub fn max_late_ms(&self) -> Option<f64> {
        self.tally.lateness.last().map(|ns| *ns as f64 / 1e6)
    }

    /// Timers whose first arrival came more than half a lease late: the
    /// ones a killed server held (a server that is merely busy stays far
    /// below that).
    pub fn taken_over(&self) -> usize {
        let half = (SERVER_LEASE / 2).as_nanos() as i64;
        self.tally.lateness.iter().filter(|&&l| l > half).count()
    }

    /// Early, lost, wrong-due and foreign requests, and duplicates of the
    /// same fence.
    pub fn check(&self) -> Check {
        let t = &self.tally;
        Check::from_errors(&[
            ("early", t.early as u64),
            ("lost", t.lost as u64),
            (
                "duplicates of the same fence",
                t.duplicates.saturating_sub(t.new_fence) as u64,
            ),
            ("wrong Wheel-Due", t.wrong_due as u64),
            ("foreign", t.foreign as u64),
        ])
    }
}

/// Sleeps until `t` (at once if it has passed).
fn sleep_until(t: SystemTime) {
    if let Ok(left) = t.duration_since(SystemTime::now()) {
        std::thread::sleep(left);
    }
}

/// Adds every timer through the servers at `addrs`, batches in turn.
fn add_all(addrs: &[SocketAddr], due: &[SystemTime], url: &str) -> Result<(), String> {
    let timers: Vec<(String, SystemTime)> =
        due.iter().enumerate().map(|(i, d)| (key(i), *d)).collect();
    for (b, chunk) in timers.chunks(ADD_BATCH).enumerate() {
        client::add_batch(addrs[b % addrs.len()], chunk, url)?;
    }
    Ok(())
}

/// Runs `p` with two servers of `bin` on the (emptied) Redis at
/// `redis_url`.
pub fn run(bin: &std::path::Path, redis_url: &str, p: &FleetParams) -> Result<FleetRun, String> {
    let dir = Workdir::new("server-fleet")?;
    let rx = receiver(Duration::ZERO);
    let backend = Backend::Redis {
        url: redis_url.into(),
        namespace: "server-bench".into(),
    };
    let mut servers = Vec::new();
    for i in 0..2 {
        let log = dir.join(&format!("server-{i}.log"));
        servers.push(ServerProcess::start(bin, &backend, &log)?);
    }
    let addrs: Vec<SocketAddr> = servers.iter().map(ServerProcess::addr).collect();
    let start = SystemTime::now();
    let due = spread(p.timers(), start + p.lead, p.window);
    add_all(&addrs, &due, &callback_url(&rx))?;
    let adding = start.elapsed().unwrap_or_default();
    let first = due.first().copied().unwrap_or(start);
    let last = due.last().copied().unwrap_or(start);
    let mut killed_at = None;
    let deadline = match p.kill_after {
        Some(after) => {
            sleep_until(first + after);
            servers[1].kill();
            let at = SystemTime::now();
            killed_at = Some(at.duration_since(first).unwrap_or_default());
            last.max(at + SERVER_LEASE) + Duration::from_secs(1) + p.bound
        }
        None => last + p.bound,
    };
    if p.kill_after.is_some() {
        // Every request, duplicates included, until the deadline.
        rx.wait_until(usize::MAX, deadline);
    } else {
        rx.wait_until(due.len(), deadline);
        std::thread::sleep(Duration::from_millis(200));
    }
    let due_ns: Vec<i64> = due.iter().map(|d| unix_ns(*d)).collect();
    let mut tally = Tally::of_received(&rx.finish(), &due_ns);
    let not_sent = still_pending(addrs[0], &tally.missing);
    tally.set_not_sent(not_sent);
    for s in servers {
        s.stop(Duration::from_secs(10));
    }
    Ok(FleetRun {
        tally,
        adding,
        killed_at,
    })
}

/// How many of the `missing` timers (the first thousand) the server at
/// `addr` still holds: sent late, not lost.
fn still_pending(addr: SocketAddr, missing: &[usize]) -> usize {
    missing
        .iter()
        .take(1_000)
        .filter(|&&i| {
            let path = format!("/v1/timers/{}", key(i));
            let Ok((200, body)) = client::request(addr, "GET", &path, None) else {
                return false;
            };
            !String::from_utf8_lossy(&body).contains(r#""state":"dead""#)
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_of(lateness_ms: &[i64], duplicates: usize, new_fence: usize) -> FleetRun {
        FleetRun {
            tally: Tally {
                expected: lateness_ms.len(),
                received: lateness_ms.len(),
                lateness: lateness_ms.iter().map(|ms| ms * 1_000_000).collect(),
                duplicates,
                new_fence,
                ..Tally::default()
            },
            adding: Duration::ZERO,
            killed_at: Some(Duration::from_secs(2)),
        }
    }

    #[test]
    fn taken_over_timers_are_those_half_a_lease_late() {
        let r = run_of(&[1, 3, 2_400, 2_600, 5_900], 2, 2);
        assert_eq!(r.taken_over(), 2);
        assert_eq!(r.max_late_ms(), Some(5_900.0));
        assert_eq!(r.check(), Check::Passed, "a new fence is at-least-once");
        let same = run_of(&[1], 3, 2).check().label();
        assert!(same.contains("1 duplicates of the same fence"), "{same}");
        assert_eq!(run_of(&[], 0, 0).max_late_ms(), None);
    }

    #[test]
    fn a_run_has_rate_times_window_timers() {
        let p = FleetParams {
            rate: 1_000,
            window: Duration::from_millis(2_500),
            lead: Duration::from_secs(3),
            bound: Duration::from_secs(3),
            kill_after: None,
        };
        assert_eq!(p.timers(), 2_500);
    }
}
