//! The flows section: what flow limits cost per callback on Redis
//! ([`crate::durable::flow_cost`]), dead letters replayed in bulk
//! ([`crate::durable::replay`]), and the two targets. The cost rows need
//! a `redis-server` (started for the section; skipped with a printed
//! reason without one); the embedded replay runs anyway.
//!
//! Targets are measured, never asserted: a missed one prints "no" and
//! never fails the run; the check columns do.

use std::time::Duration;

use wheel_testkit::{RedisServer, ServerOptions};

use super::{Progress, Results, Settings, fmt_count};
use crate::durable::flow_cost::{self, FlowCostParams, FlowCostRun, Limit, PARALLELISM};
use crate::durable::ours::Store;
use crate::durable::replay::{self, ReplayParams, ReplayRun};
use crate::durable::{flush, remove_store, temp_store};
use crate::report::Table;
use crate::workloads::Check;

/// The section's sizes.
#[derive(Debug, Clone)]
pub struct FlowsParams {
    /// The quick run's smaller sizes.
    pub quick: bool,
    /// The callbacks of each flow-control case.
    pub cost: FlowCostParams,
    /// The replay.
    pub replay: ReplayParams,
    /// Whether the replay runs on Redis too.
    pub replay_redis: bool,
}

/// The flow-controlled callback's CPU, at most this many times the
/// uncontrolled one's (judged on the case whose limits do not bind).
pub const COST_TARGET: f64 = 1.5;

/// How far the replay's time may be from its rate's schedule.
pub const REPLAY_TOLERANCE: f64 = 0.10;

impl FlowsParams {
    /// `--quick`: 3 000 callbacks at 1 000/s; 1 000 dead letters at
    /// 200/s, embedded only.
    pub fn quick() -> FlowsParams {
        FlowsParams::with(true, 3_000, 1_000, Duration::from_secs(5))
    }

    /// The full run: 20 000 callbacks at 2 000/s; 1 000 dead letters at
    /// 200/s, embedded and Redis.
    pub fn full() -> FlowsParams {
        FlowsParams::with(false, 20_000, 2_000, Duration::from_secs(10))
    }

    fn with(quick: bool, n: usize, offered: u64, bound: Duration) -> FlowsParams {
        FlowsParams {
            quick,
            cost: FlowCostParams {
                n,
                offered,
                nodes: 3,
                bound,
            },
            replay: ReplayParams {
                n: 1_000,
                rate: 200.0,
            },
            replay_redis: !quick,
        }
    }
}

/// Starts the section's Redis server, or says why there is none.
fn start_server(progress: &Progress) -> Option<RedisServer> {
    if !RedisServer::available() {
        progress.say("flows: redis-server is not on the PATH; the Redis rows are skipped");
        return None;
    }
    match RedisServer::start(ServerOptions::default()) {
        Ok(s) => Some(s),
        Err(e) => {
            progress.say(format!(
                "flows: redis-server did not start ({e}); the Redis rows are skipped"
            ));
            None
        }
    }
}

/// Runs the section into `results`.
pub fn run_flows(s: &Settings, progress: &Progress, results: &mut Results) {
    let p = &s.flows;
    let server = start_server(progress);
    let url = server.as_ref().map(RedisServer::url);
    let url = url.as_deref();
    let cost = url.map(|url| cost_runs(&p.cost, url, progress));
    if let Some(runs) = &cost {
        results.tables.push(cost_table(&p.cost, runs));
    }
    let replays = replay_runs(p, url, progress);
    results.tables.push(replay_table(&p.replay, &replays));
    results
        .tables
        .push(targets_table(p, cost.as_deref(), &replays));
}

type CostRuns = Vec<(Limit, Result<FlowCostRun, String>)>;

fn cost_runs(p: &FlowCostParams, url: &str, progress: &Progress) -> CostRuns {
    Limit::ALL
        .iter()
        .map(|&limit| {
            progress.say(format!("flows: cost, {}", case_name(p, limit)));
            let _ = flush(url);
            (limit, flow_cost::run(url, p, limit))
        })
        .collect()
}

type ReplayRuns = Vec<(&'static str, Result<ReplayRun, String>)>;

fn replay_runs(p: &FlowsParams, url: Option<&str>, progress: &Progress) -> ReplayRuns {
    let mut out = Vec::new();
    progress.say("flows: replay, embedded");
    let path = temp_store("replay");
    out.push((
        "embedded",
        replay::run(&Store::Embedded(path.clone()), &p.replay),
    ));
    remove_store(&path);
    if let Some(url) = url.filter(|_| p.replay_redis) {
        progress.say("flows: replay, Redis");
        let _ = flush(url);
        out.push(("Redis", replay::run(&Store::Redis(url.into()), &p.replay)));
        let _ = flush(url);
    }
    out
}

/// "no limits", "rate 20K/s, parallelism 1000 (not binding)", ...
fn case_name(p: &FlowCostParams, limit: Limit) -> String {
    let rate = |l| fmt_count(p.rate(l).unwrap_or(0) as usize);
    match limit {
        Limit::None => "no limits".into(),
        Limit::Loose => format!(
            "rate {}/s, parallelism {PARALLELISM} (not binding)",
            rate(limit)
        ),
        Limit::Binding => format!(
            "rate {}/s, parallelism {PARALLELISM} (rate binding)",
            rate(limit)
        ),
    }
}

/// "1.07x", or "-".
fn ratio_cell(num: Option<f64>, den: Option<f64>) -> String {
    ratio(num, den).map_or("-".into(), |r| format!("{r:.2}x"))
}

fn ratio(num: Option<f64>, den: Option<f64>) -> Option<f64> {
    let (n, d) = (num?, den?);
    (d > 0.0).then(|| n / d)
}

fn us_cell(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.1}"))
}

fn cost_table(p: &FlowCostParams, runs: &CostRuns) -> Table {
    let intro = format!(
        "{} callbacks (POST to the HTTP section's loopback receiver, answering 200 at once; all \
         of one flow key, the receiver's origin) due evenly at {}/s over {:.0} s, added up front, \
         sent by {} nodes in this process on one private Redis (builder defaults), once per \
         case on an emptied server: the flow key without limits, under limits that do not bind \
         (a rate 10x the offered load, a parallelism of {PARALLELISM}), and under a rate of half \
         the offered load, which every callback waits for. CPU over the firing part, from the \
         first due time until every callback arrived, per callback received: Redis's from \
         `INFO cpu` (every thread, read every 50 ms, the samples around the part), this \
         process's from every live thread's time on CPU (the nodes and the receiver: the \
         receiver's share is the same in every case); ratio: to the case without limits; Redis, core: Redis's CPU seconds per second over \
         the part. \
         Late: arrival minus due time; under the binding rate the n-th callback's slot is n / \
         rate after the first due time, so the last is as late as the window is long. Busiest \
         second: the most arrivals within any one second. Check: none early (before \
         its due time), lost ({} s past the expected end) or twice, and under a rate none over \
         it in the busiest second (5 % slack, at least 5, for the arrivals' jitter).",
        fmt_count(p.n),
        fmt_count(p.offered as usize),
        p.window().as_secs_f64(),
        p.nodes,
        p.bound.as_secs()
    );
    let mut t = Table::new(
        &format!(
            "Flow control: cost per callback on Redis ({} callbacks at {}/s, {} nodes)",
            fmt_count(p.n),
            fmt_count(p.offered as usize),
            p.nodes
        ),
        &intro,
        &[
            "implementation",
            "flow key",
            "s to last",
            "busiest second",
            "late ms, p50 / p99 / max",
            "Redis CPU µs",
            "ratio",
            "Redis, core",
            "node CPU µs",
            "ratio",
            "early",
            "lost",
            "duplicates",
            "check",
        ],
    );
    let base = runs.iter().find_map(|(l, r)| match (l, r) {
        (Limit::None, Ok(r)) => Some(r),
        _ => None,
    });
    let name = format!("ours, Redis, {} nodes", p.nodes);
    for (limit, r) in runs {
        let case = case_name(p, *limit);
        let r = match r {
            Ok(r) => r,
            Err(e) => {
                t.row(vec![name.clone(), case, Check::Failed(e.clone()).label()]);
                continue;
            }
        };
        let late = |q| {
            r.tally
                .lateness_ms(q)
                .map_or("-".into(), |v| format!("{v:.1}"))
        };
        t.row(vec![
            name.clone(),
            case,
            r.tally.span_s().map_or("-".into(), |s| format!("{s:.2}")),
            r.busiest.to_string(),
            format!("{} / {} / {}", late(50.0), late(99.0), late(100.0)),
            us_cell(r.redis_us()),
            ratio_cell(r.redis_us(), base.and_then(FlowCostRun::redis_us)),
            r.redis_cores().map_or("-".into(), |c| format!("{c:.2}")),
            us_cell(r.node_us()),
            ratio_cell(r.node_us(), base.and_then(FlowCostRun::node_us)),
            r.tally.early.to_string(),
            r.tally.lost_cell(),
            r.tally.duplicates_cell(),
            r.check().label(),
        ]);
    }
    t
}

fn replay_table(p: &ReplayParams, runs: &ReplayRuns) -> Table {
    let intro = format!(
        "{} plain timers due at once, whose handler gives up (`Outcome::Fail`) on their first \
         run, on one node (builder defaults); once all are dead letters, the handler records \
         instead and `replay_dead(&DeadFilter::default(), {:.0}.0, None)` replays them all \
         (expected: {:.1} s at that rate). To done: from the call to `Replay::wait` returning. \
         To last start: from the call to the last replayed timer's handler start. Check: every \
         dead letter revived and run once, and none ahead of the pace (the k-th earliest run \
         no sooner than k / rate after the call).",
        fmt_count(p.n),
        p.rate,
        p.expected().as_secs_f64()
    );
    let mut t = Table::new(
        &format!(
            "Dead letters: bulk replay ({} at {:.0}/s)",
            fmt_count(p.n),
            p.rate
        ),
        &intro,
        &[
            "implementation",
            "to done s",
            "to last start s",
            "revived",
            "ran",
            "duplicates",
            "check",
        ],
    );
    for (store, r) in runs {
        let name = format!("ours, {store}, 1 node");
        match r {
            Ok(r) => t.row(vec![
                name,
                format!("{:.3}", r.to_done.as_secs_f64()),
                r.to_last_run
                    .map_or("-".into(), |d| format!("{:.3}", d.as_secs_f64())),
                r.revived.to_string(),
                r.ran.to_string(),
                r.duplicates.to_string(),
                r.check(p.n).label(),
            ]),
            Err(e) => t.row(vec![name, Check::Failed(e.clone()).label()]),
        }
    }
    t
}

fn targets_table(
    p: &FlowsParams,
    cost: Option<&[(Limit, Result<FlowCostRun, String>)]>,
    replays: &ReplayRuns,
) -> Table {
    let intro = "Flow control's and replay's targets against this run's figures (measured, never \
                 asserted; a missed target never fails the run). The cost target is judged on \
                 the limits that do not bind: what counting each start against a rate and a \
                 parallelism costs. The binding rate is shown beside it, not judged: its \
                 callbacks wait for their slots, so the run lasts twice as long and its nodes \
                 poll and renew through it. \"not measured\": no Redis server, or the run failed.";
    let mut t = Table::new(
        "Flow control and replay: targets",
        intro,
        &["target", "workload", "measured", "met"],
    );
    let size = |c: &FlowCostParams| {
        format!(
            "{} callbacks at {}/s, {} nodes",
            fmt_count(c.n),
            fmt_count(c.offered as usize),
            c.nodes
        )
    };
    let workload = if p.quick {
        format!(
            "quick: {} (full: {})",
            size(&p.cost),
            size(&FlowsParams::full().cost)
        )
    } else {
        size(&p.cost)
    };
    for (limit, judged) in [(Limit::Loose, true), (Limit::Binding, false)] {
        let what = if judged {
            format!(
                "flow-controlled callback <= {COST_TARGET}x the uncontrolled one's CPU (Redis, node), limits not binding"
            )
        } else {
            "the same, rate binding (shown, not judged)".to_string()
        };
        let (m, met) = cost_target(cost, limit, judged);
        t.row(vec![what, workload.clone(), m, met]);
    }
    for (store, r) in replays {
        let what = format!(
            "replay {} dead letters at {:.0}/s: start to last replayed run {:.0} s ± {:.0} %",
            fmt_count(p.replay.n),
            p.replay.rate,
            p.replay.expected().as_secs_f64(),
            REPLAY_TOLERANCE * 100.0
        );
        let (m, met) = replay_target(&p.replay, r);
        t.row(vec![what, format!("{store} store, 1 node"), m, met]);
    }
    t
}

/// The measured cell and the verdict of one cost case.
fn cost_target(
    cost: Option<&[(Limit, Result<FlowCostRun, String>)]>,
    limit: Limit,
    judged: bool,
) -> (String, String) {
    let find = |l: Limit| {
        cost?.iter().find_map(|(x, r)| match r {
            Ok(r) if *x == l => Some(r),
            _ => None,
        })
    };
    let (Some(base), Some(run)) = (find(Limit::None), find(limit)) else {
        return ("not measured".into(), "-".into());
    };
    let redis = ratio(run.redis_us(), base.redis_us());
    let node = ratio(run.node_us(), base.node_us());
    let (Some(redis), Some(node)) = (redis, node) else {
        return ("not measured".into(), "-".into());
    };
    let m = format!("Redis {redis:.2}x, node {node:.2}x");
    let ok = redis <= COST_TARGET && node <= COST_TARGET;
    let met = match (judged, ok) {
        (true, true) => "yes",
        (true, false) => "no",
        (false, true) => "(within it)",
        (false, false) => "(over it)",
    };
    (m, met.into())
}

/// The measured cell and the verdict of one replay.
fn replay_target(p: &ReplayParams, r: &Result<ReplayRun, String>) -> (String, String) {
    let Some(last) = r.as_ref().ok().and_then(|r| r.to_last_run) else {
        return ("not measured".into(), "-".into());
    };
    let want = p.expected().as_secs_f64();
    let got = last.as_secs_f64();
    let ok = (got - want).abs() <= want * REPLAY_TOLERANCE;
    (format!("{got:.3} s"), if ok { "yes" } else { "no" }.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_replay_target_is_its_schedule_within_ten_percent() {
        let p = ReplayParams {
            n: 1_000,
            rate: 200.0,
        };
        let run = |ms| {
            Ok(ReplayRun {
                to_done: Duration::from_millis(ms),
                to_last_run: Some(Duration::from_millis(ms)),
                revived: 1_000,
                ran: 1_000,
                duplicates: 0,
                ahead: 0,
                ended: None,
            })
        };
        assert_eq!(replay_target(&p, &run(5_400)).1, "yes");
        assert_eq!(replay_target(&p, &run(4_400)).1, "no");
        assert_eq!(replay_target(&p, &run(5_600)).1, "no");
        assert_eq!(replay_target(&p, &Err("x".into())).0, "not measured");
    }

    #[test]
    fn the_quick_run_is_smaller_and_skips_the_redis_replay() {
        let (q, f) = (FlowsParams::quick(), FlowsParams::full());
        assert!(q.quick && !f.quick && !q.replay_redis && f.replay_redis);
        assert!(q.cost.n < f.cost.n);
        assert_eq!(f.cost.n, 20_000);
        assert_eq!((f.replay.n, f.replay.rate), (1_000, 200.0));
    }
}
