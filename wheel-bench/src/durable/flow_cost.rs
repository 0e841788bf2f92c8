//! What flow control costs on Redis: the same callbacks sent by the same
//! nodes, once with their flow key under no limits and once under limits
//! ([`Limit`]), with the CPU each callback took in Redis and in this
//! process.
//!
//! Every callback is a `POST` to the HTTP section's loopback receiver
//! (answering `200` at once), so all share one flow key: the receiver's
//! origin. They are due evenly at the offered rate and added up front
//! through one node; the nodes (in this process, on one Redis) send them.
//!
//! CPU is taken over the firing part: from the first due time to the
//! moment every callback has arrived (or the wait gave up). Redis's from
//! `INFO cpu` read every 50 ms ([`redis_cpu`]), the samples around that
//! part; this process's from every live thread's time on CPU
//! ([`CpuSample`]) at those two moments. This process holds the nodes and
//! the receiver, so its figure is the nodes' cost plus the receiver's,
//! which is the same in every case.
//!
//! The check is the receiver's ([`Tally`]): none early (before its due
//! time), lost or twice; under a rate, also none over it: the busiest
//! second of arrivals may exceed the rate by 5 % (at least 5) for the
//! arrivals' jitter, not more.

use std::time::{Duration, SystemTime};

use wheel_durable::http::{HttpCallback, HttpConfig, Method};
use wheel_durable::{DurableTimers, FlowLimits, TimerState};
use wheel_testkit::Received;

use super::http::tally::Tally;
use super::http::{add_all, callback_payload, callback_url, receiver};
use super::ours::{self, Store};
use super::redis_cpu::{self, Sampler};
use super::{key, spread, unix_ns};
use crate::cpu::CpuSample;
use crate::workloads::Check;

/// The limits a run puts on the callbacks' flow key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// None: flow control does nothing but find each callback's key.
    None,
    /// A rate 10x the offered load and a parallelism well above what is
    /// in flight: counted at every start, never binding.
    Loose,
    /// Half the offered load: every callback waits for its slot.
    Binding,
}

impl Limit {
    /// The three cases, in the table's order.
    pub const ALL: [Limit; 3] = [Limit::None, Limit::Loose, Limit::Binding];
}

/// The run's sizes.
#[derive(Debug, Clone, Copy)]
pub struct FlowCostParams {
    /// Callbacks per case.
    pub n: usize,
    /// Callbacks due per second.
    pub offered: u64,
    /// Nodes sending them.
    pub nodes: usize,
    /// How long past the expected end a callback may arrive before it
    /// counts as lost.
    pub bound: Duration,
}

/// The parallelism of both limited cases: far above what a receiver
/// answering at once keeps in flight at these rates.
pub const PARALLELISM: u32 = 1_000;

impl FlowCostParams {
    /// Over how long the callbacks come due.
    pub fn window(&self) -> Duration {
        Duration::from_secs_f64(self.n as f64 / self.offered.max(1) as f64)
    }

    /// The rate of `limit` per second, if it has one.
    pub fn rate(&self, limit: Limit) -> Option<u64> {
        match limit {
            Limit::None => None,
            Limit::Loose => Some(self.offered * 10),
            Limit::Binding => Some((self.offered / 2).max(1)),
        }
    }

    /// The flow key's limits in `limit`'s case.
    pub fn limits(&self, limit: Limit) -> Option<FlowLimits> {
        let rate = u32::try_from(self.rate(limit)?).unwrap_or(u32::MAX);
        Some(
            FlowLimits::new()
                .rate(rate, Duration::from_secs(1))
                .parallelism(PARALLELISM),
        )
    }

    /// From the first due time to when the last callback can arrive: the
    /// window, or under a binding rate the time its slots take.
    fn firing(&self, limit: Limit) -> Duration {
        let paced = self.rate(limit).map_or(Duration::ZERO, |r| {
            Duration::from_secs_f64(self.n as f64 / r as f64)
        });
        self.window().max(paced)
    }

    /// The lead from the start to the first due time: adding takes time.
    fn lead(&self) -> Duration {
        Duration::from_secs(1) + Duration::from_micros(20) * self.n as u32
    }
}

/// One case's figures.
#[derive(Debug, Clone)]
pub struct FlowCostRun {
    /// The receiver's tally.
    pub tally: Tally,
    /// Redis CPU seconds over the firing part.
    pub redis_cpu_s: Option<f64>,
    /// This process's CPU over the firing part.
    pub node_cpu: Option<Duration>,
    /// The firing part: from the first due time until every callback
    /// arrived (or the wait gave up).
    pub firing: Duration,
    /// The most arrivals in any one second.
    pub busiest: usize,
    /// The rate limit, per second, if any.
    pub rate: Option<u64>,
}

impl FlowCostRun {
    /// Redis CPU µs per callback sent.
    pub fn redis_us(&self) -> Option<f64> {
        Some(self.redis_cpu_s? * 1e6 / self.sent()?)
    }

    /// Redis's CPU seconds per second over the firing part.
    pub fn redis_cores(&self) -> Option<f64> {
        let secs = self.firing.as_secs_f64();
        (secs > 0.0).then(|| self.redis_cpu_s.map(|c| c / secs))?
    }

    /// This process's CPU µs per callback sent.
    pub fn node_us(&self) -> Option<f64> {
        Some(self.node_cpu?.as_secs_f64() * 1e6 / self.sent()?)
    }

    fn sent(&self) -> Option<f64> {
        (self.tally.received > 0).then_some(self.tally.received as f64)
    }

    /// Arrivals over the rate in the busiest second, beyond the slack.
    pub fn over_rate(&self) -> usize {
        self.rate.map_or(0, |r| {
            let slack = (r / 20).max(5) as usize;
            self.busiest.saturating_sub(r as usize + slack)
        })
    }

    /// The tally's check, and none over the rate.
    pub fn check(&self) -> Check {
        self.tally.check().merge(Check::from_errors(&[(
            "over the rate in the busiest second",
            self.over_rate() as u64,
        )]))
    }
}

/// The most of `times_ns` within any span of one second.
pub fn busiest_second(times_ns: &mut [i64]) -> usize {
    times_ns.sort_unstable();
    let mut best = 0;
    let mut from = 0;
    for (to, t) in times_ns.iter().enumerate() {
        while *t - times_ns[from] >= 1_000_000_000 {
            from += 1;
        }
        best = best.max(to + 1 - from);
    }
    best
}

/// Redis CPU seconds between the last sample at or before `from` and the
/// first at or after `to` (ns since the epoch).
fn redis_used(samples: &[redis_cpu::Sample], from: i64, to: i64) -> Option<f64> {
    let a = samples.iter().rev().find(|(t, _)| *t <= from)?;
    let b = samples.iter().find(|(t, _)| *t >= to)?;
    Some(b.1.server - a.1.server)
}

/// Sleeps until `t` (not at all if it is past).
fn sleep_until(t: SystemTime) {
    if let Ok(left) = t.duration_since(SystemTime::now()) {
        std::thread::sleep(left);
    }
}

/// `n` nodes on Redis at `url` sending callbacks.
fn nodes(url: &str, ns: &str, n: usize) -> Result<Vec<DurableTimers>, String> {
    let store = Store::Redis(url.into());
    (0..n)
        .map(|_| {
            ours::builder(&store, ns)
                .http(HttpConfig::new())
                .build()
                .map_err(|e| e.to_string())
        })
        .collect()
}

/// Runs `limit`'s case on Redis at `url` (emptied by the caller).
pub fn run(url: &str, p: &FlowCostParams, limit: Limit) -> Result<FlowCostRun, String> {
    let rx = receiver(Duration::ZERO);
    let target = callback_url(&rx);
    let payload = callback_payload(&target)?;
    let nodes = nodes(url, "flow-cost", p.nodes.max(1))?;
    let out = (|| {
        let first = &nodes[0];
        if let Some(l) = p.limits(limit) {
            let flow = HttpCallback::new(Method::Post, &target).flow_key();
            first
                .set_flow_limits(&flow, &l)
                .map_err(|e| e.to_string())?;
        }
        let sampler = Sampler::start(url)?;
        let due = spread(p.n, SystemTime::now() + p.lead(), p.window());
        add_all(first, &due, &payload)?;
        let from = due[0];
        sleep_until(from);
        let cpu0 = CpuSample::now();
        rx.wait_until(p.n, from + p.firing(limit) + p.bound);
        let cpu1 = CpuSample::now();
        let now = SystemTime::now();
        let to = unix_ns(now);
        // A little longer for duplicates to show.
        std::thread::sleep(Duration::from_millis(200));
        let samples = sampler.finish();
        let log = rx.finish();
        let mut tally = tally_of(&log, &due);
        let not_sent = not_sent(first, &tally.missing);
        tally.set_not_sent(not_sent);
        let mut times: Vec<i64> = log.iter().map(|r| unix_ns(r.at)).collect();
        Ok(FlowCostRun {
            tally,
            redis_cpu_s: redis_used(&samples, unix_ns(from), to),
            node_cpu: cpu1.since(&cpu0, Duration::ZERO),
            firing: now.duration_since(from).unwrap_or_default(),
            busiest: busiest_second(&mut times),
            rate: p.rate(limit),
        })
    })();
    ours::shutdown_all(nodes).map_err(|e| e.to_string())?;
    out
}

fn tally_of(log: &[Received], due: &[SystemTime]) -> Tally {
    let due_ns: Vec<i64> = due.iter().map(|d| unix_ns(*d)).collect();
    Tally::of_received(log, &due_ns)
}

/// Of the missing callbacks, those still in the store (not dead): behind,
/// not lost.
fn not_sent(t: &DurableTimers, missing: &[usize]) -> usize {
    missing
        .iter()
        .filter(|i| matches!(t.get(&key(**i)), Ok(Some(info)) if info.state != TimerState::Dead))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_busiest_second_counts_within_any_one_second_span() {
        let s = 1_000_000_000;
        let mut t = vec![0, s / 2, s - 1, s, 3 * s, 3 * s + 1];
        // 0, s/2 and s-1 lie within one second; s starts the next span.
        assert_eq!(busiest_second(&mut t), 3);
        assert_eq!(busiest_second(&mut []), 0);
    }

    #[test]
    fn the_cases_limit_at_ten_times_and_half_the_offered_load() {
        let p = FlowCostParams {
            n: 3_000,
            offered: 1_000,
            nodes: 3,
            bound: Duration::from_secs(5),
        };
        assert_eq!(p.window(), Duration::from_secs(3));
        assert_eq!(p.limits(Limit::None), None);
        assert_eq!(p.rate(Limit::Loose), Some(10_000));
        assert_eq!(p.rate(Limit::Binding), Some(500));
        assert_eq!(p.firing(Limit::Loose), Duration::from_secs(3));
        assert_eq!(p.firing(Limit::Binding), Duration::from_secs(6));
        let l = p.limits(Limit::Binding).unwrap();
        assert_eq!(l.rate_limit(), Some((500, Duration::from_secs(1))));
        assert_eq!(l.parallelism_limit(), Some(PARALLELISM));
    }

    #[test]
    fn arrivals_over_the_rate_beyond_the_slack_fail_the_check() {
        let run = |busiest, rate| FlowCostRun {
            tally: Tally::of(&[], &[]),
            redis_cpu_s: None,
            node_cpu: None,
            firing: Duration::from_secs(2),
            busiest,
            rate,
        };
        assert_eq!(run(525, Some(500)).over_rate(), 0);
        assert_eq!(run(530, Some(500)).over_rate(), 5);
        assert!(run(530, Some(500)).check().label().starts_with("FAILED"));
        assert_eq!(run(9_999, None).check(), Check::Passed);
        let cpu = FlowCostRun {
            redis_cpu_s: Some(0.5),
            ..run(0, None)
        };
        assert_eq!(cpu.redis_cores(), Some(0.25));
    }

    #[test]
    fn redis_cpu_is_the_difference_of_the_samples_around_the_part() {
        let at = |t: i64, s: f64| {
            let c = redis_cpu::CpuTotals {
                server: s,
                main: None,
            };
            (t, c)
        };
        let samples = [at(0, 1.0), at(10, 1.5), at(20, 2.5), at(30, 2.75)];
        assert_eq!(redis_used(&samples, 12, 25), Some(1.25));
        assert_eq!(redis_used(&samples, -1, 25), None);
    }
}
