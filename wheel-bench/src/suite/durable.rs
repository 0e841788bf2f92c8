//! The durable section: our durable timers (embedded; Redis with one and
//! three nodes) and the one-second Redis time wheel, on a private
//! `redis-server` started for the section (the embedded part alone when
//! there is none). Tables: a ladder of lateness at rising rates, a node
//! killed, throughput (with the raw disk's ceiling and Redis's CPU),
//! Redis's time by script, adds while nodes fire, the embedded restart,
//! outages and shutdown, and the targets.

use std::time::Duration;

use wheel_testkit::{RedisServer, ServerOptions};

use super::{Progress, Results, Settings, fmt_count};
use crate::chart::Panel;
use crate::durable::adds_firing::{self, AddsFiringParams};
use crate::durable::chart;
use crate::durable::cluster::{self, ClusterParams};
use crate::durable::kill::{self, KillParams, KillRun};
use crate::durable::lateness::{self, LatenessParams};
use crate::durable::nearfar::{self, NearFarParams};
use crate::durable::node::Kind;
use crate::durable::outage::{self, OutageParams, ShutdownStore};
use crate::durable::script_cost;
use crate::durable::throughput::{self, Restart, ThroughputParams};
use crate::durable::{Impl, flush};
use crate::report::{Table, ms};
use crate::workloads::Check;

mod cluster_table;
mod cost_table;
mod tables;
mod targets;

use targets::Figures;

/// The durable section's sizes.
#[derive(Debug, Clone)]
pub struct DurableParams {
    /// The quick run's smaller workloads (the targets table says which
    /// targets they cannot judge).
    pub quick: bool,
    /// Timers due per second, the steps of the lateness ladder.
    pub rates: Vec<u64>,
    /// The lateness workloads (their `rate` is replaced by each of `rates`).
    pub lateness: LatenessParams,
    /// The kill workload.
    pub kill: KillParams,
    /// Throughput and restart sizes.
    pub throughput: ThroughputParams,
    /// Adds while nodes fire.
    pub near_far: NearFarParams,
    /// Single adds of timers due soon while nodes fire them.
    pub adds_firing: AddsFiringParams,
    /// Outages and shutdown.
    pub outage: OutageParams,
    /// One namespace on a Redis Cluster.
    pub cluster: ClusterParams,
}

impl DurableParams {
    /// `--quick`: a ladder of 1K, 10K and 30K/s over 1 s windows (5 s for
    /// the kill), a 2 s lease for the kill, 5K timers for the fire rates,
    /// 100K pending for the restart.
    pub fn quick() -> DurableParams {
        let mut p = DurableParams::with(
            Duration::from_secs(1),
            Duration::from_secs(2),
            100_000,
            true,
        );
        // The peer takes timers up to 2 s ahead: its nodes still take whole
        // seconds' batches after the midpoint only if well over 2 s of the
        // window are left then.
        p.kill.window = Duration::from_secs(5);
        p
    }

    /// The full run: a ladder of 1K, 10K, 30K and 60K/s over 10 s windows,
    /// the default 5 s lease, 100K timers for the fire rates, 1M pending.
    pub fn full() -> DurableParams {
        DurableParams::with(
            Duration::from_secs(10),
            Duration::from_secs(5),
            1_000_000,
            false,
        )
    }

    fn with(window: Duration, lease: Duration, restart: usize, quick: bool) -> DurableParams {
        DurableParams {
            quick,
            rates: if quick {
                vec![1_000, 10_000, 30_000]
            } else {
                vec![1_000, 10_000, 30_000, 60_000]
            },
            lateness: LatenessParams {
                rate: 1_000,
                window,
                // Longer than our claim window (2 s): every timer is claimed
                // as it enters the window, as when timers are added well
                // ahead, not in one burst right after the adding.
                lead: Duration::from_millis(if quick { 2_500 } else { 3_000 }),
                add_allowance: Duration::from_micros(20),
                // Long enough for a node that falls behind to catch up (at a
                // third of the rate, say), so that "lost" means lost; the
                // quick run waits less (what is left shows as not run yet).
                grace: Duration::from_secs(if quick { 3 } else { 10 }) + window * 2,
            },
            kill: KillParams {
                rate: 1_000,
                window,
                lead: Duration::from_secs(1),
                nodes: 3,
                workers: 8,
                lease,
                work: Duration::from_millis(5),
                grace: Duration::from_secs(1),
            },
            throughput: ThroughputParams {
                add_for: Duration::from_millis(if quick { 500 } else { 2_000 }),
                threads: 8,
                most_threads: 64,
                bulk: if quick { 50_000 } else { 200_000 },
                fire: if quick { 5_000 } else { 100_000 },
                restart,
                overdue: 1_000,
            },
            near_far: NearFarParams {
                threads: 4,
                // Long enough that near-due timers fire while adding.
                add_for: Duration::from_millis(if quick { 1_500 } else { 4_000 }),
                near_from: Duration::from_millis(500),
                near_to: Duration::from_secs(3),
                nodes: 3,
            },
            adds_firing: AddsFiringParams {
                timers: if quick { 5_000 } else { 20_000 },
                threads: 4,
                lead: Duration::from_secs(3),
                rate: 6_667,
                nodes: 3,
                grace: Duration::from_secs(5),
            },
            cluster: ClusterParams {
                masters: 3,
                nodes: 3,
                fire: if quick { 20_000 } else { 100_000 },
            },
            outage: OutageParams {
                unavailable_after: Duration::from_secs(1),
                polls: 20,
                poll_every: Duration::from_millis(100),
                timers: 1_000,
                claimed: if quick { 10_000 } else { 50_000 },
            },
        }
    }
}

/// The machine's one-minute load average for progress lines: the runs
/// here wait on other threads and processes, so a busy machine shows.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(|l| format!(" (load {l})")))
        .unwrap_or_default()
}

/// What the quick run runs, smaller than the full run.
fn quick_line(p: &DurableParams) -> String {
    let rates: Vec<String> = p.rates.iter().map(|&r| fmt_count(r as usize)).collect();
    format!(
        "durable, quick: lateness at {}/s over {} s windows, the kill over {} s, adds for {} s, \
         {} timers per fire rate, {} pending for the restart (smaller than the full run)",
        rates.join(", "),
        p.lateness.window.as_secs_f64(),
        p.kill.window.as_secs_f64(),
        p.throughput.add_for.as_secs_f64(),
        fmt_count(p.throughput.fire),
        fmt_count(p.throughput.restart)
    )
}

/// Starts the section's Redis server, or says why there is none.
fn start_server(progress: &Progress) -> Option<RedisServer> {
    if !RedisServer::available() {
        progress.say(
            "durable: redis-server is not on the PATH (install it: apt-get install redis-server); \
             running the embedded store only",
        );
        return None;
    }
    match RedisServer::start(ServerOptions::default()) {
        Ok(s) => Some(s),
        Err(e) => {
            progress.say(format!(
                "durable: redis-server did not start ({e}); embedded only"
            ));
            None
        }
    }
}

/// Runs the durable section into `results`.
pub fn run_durable(s: &Settings, progress: &Progress, results: &mut Results) {
    let p = &s.durable;
    if p.quick {
        progress.say(quick_line(p));
    }
    let server = start_server(progress);
    let url = server.as_ref().map(RedisServer::url);
    let url = url.as_deref();
    let mut figures = Figures::default();
    let (ladder, panels) = ladder_table(p, url, progress, &mut figures);
    results.durable_chart = Some((results.tables.len(), panels));
    results.tables.push(ladder);
    if let Some(url) = url {
        results
            .tables
            .push(kill_table(&p.kill, url, progress, &mut figures));
    }
    results
        .tables
        .push(throughput_table(&p.throughput, url, progress, &mut figures));
    if let Some(url) = url {
        results
            .tables
            .push(script_cost_table(&p.throughput, url, progress));
        results
            .tables
            .push(near_far_table(&p.near_far, url, progress, &mut figures));
        results
            .tables
            .push(adds_firing_table(&p.adds_firing, url, progress));
        results.tables.push(cluster_table(&p.cluster, progress));
    }
    results.tables.push(restart_table(&p.throughput, progress));
    results.tables.push(outage_table(&p.outage, url, progress));
    let http = results.http.as_ref().map(|f| (f, &s.http));
    results
        .tables
        .push(targets::targets(&figures, p, url.is_some(), http));
}

/// The HTTP targets alone, for a run without the durable section.
pub(super) fn http_targets_table(f: &super::HttpFigures, p: &super::HttpParams) -> Table {
    targets::http_only(f, p)
}

/// The implementations of the ladder that can run: all with a Redis
/// server, the embedded store alone without.
fn lineup(redis: bool) -> Vec<Impl> {
    let mut v = vec![Impl::Embedded];
    if redis {
        v.extend([Impl::Redis { nodes: 3 }, Impl::Peer { nodes: 3 }]);
    }
    v
}

/// The lateness ladder: every implementation at every rate, one chart
/// panel per rate.
fn ladder_table(
    p: &DurableParams,
    url: Option<&str>,
    progress: &Progress,
    figures: &mut Figures,
) -> (Table, Vec<Panel>) {
    let mut t = tables::lateness(p);
    let mut panels = Vec::new();
    for &rate in &p.rates {
        let params = LatenessParams {
            rate,
            ..p.lateness.clone()
        };
        panels.push(ladder_step(&params, url, progress, figures, &mut t));
    }
    (t, panels)
}

/// One rate of the ladder: its rows into `t`, its chart panel returned.
fn ladder_step(
    p: &LatenessParams,
    url: Option<&str>,
    progress: &Progress,
    figures: &mut Figures,
    t: &mut Table,
) -> Panel {
    let mut panel = Panel {
        title: format!(
            "{}/s, {} timers",
            fmt_count(p.rate as usize),
            fmt_count(p.timers())
        ),
        series: Vec::new(),
    };
    for imp in lineup(url.is_some()) {
        progress.say(format!("durable {}/s: {}{}", p.rate, imp.name(), load()));
        if let Some(url) = url {
            let _ = flush(url);
        }
        match lateness::run(imp, p, url) {
            Ok(r) => {
                figures.lateness(imp, p.rate, &r);
                panel.series.push(chart::series(&imp.name(), &r.summary));
                t.row(tables::lateness_row(&imp.name(), p.rate, &r));
            }
            Err(e) => t.row(failed_row(&imp.name(), &e)),
        }
    }
    panel
}

/// A row saying the run failed, in the check column.
fn failed_row(name: &str, why: &str) -> Vec<String> {
    vec![name.into(), Check::Failed(why.into()).label()]
}

fn kill_table(p: &KillParams, url: &str, progress: &Progress, figures: &mut Figures) -> Table {
    let mut t = tables::kill(p);
    let exe = std::env::current_exe();
    for (kind, name) in [
        (Kind::Ours, Impl::Redis { nodes: p.nodes }.name()),
        (Kind::Peer, Impl::Peer { nodes: p.nodes }.name()),
    ] {
        progress.say(format!("durable kill: {name}{}", load()));
        let _ = flush(url);
        let run: Result<KillRun, String> = exe
            .as_ref()
            .map_err(|e| e.to_string())
            .and_then(|exe| kill::run(kind, p, exe, url));
        match run {
            Ok(r) => {
                if kind == Kind::Ours {
                    figures.kill = Some(r.clone());
                }
                t.row(tables::kill_row(&name, &r));
            }
            Err(e) => t.row(failed_row(&name, &e)),
        }
    }
    t
}

fn throughput_table(
    p: &ThroughputParams,
    url: Option<&str>,
    progress: &Progress,
    figures: &mut Figures,
) -> Table {
    let mut t = tables::throughput(p);
    for imp in [
        Impl::Embedded,
        Impl::Redis { nodes: 1 },
        Impl::Peer { nodes: 1 },
    ] {
        if imp.needs_redis() && url.is_none() {
            continue;
        }
        let name = match imp {
            Impl::Embedded => "ours, embedded".to_string(),
            Impl::Redis { .. } => "ours, Redis".into(),
            Impl::Peer { .. } => "one-second Redis wheel".into(),
        };
        progress.say(format!("durable throughput: {name}{}", load()));
        match throughput::measure(imp, p, url) {
            Ok(m) => {
                figures.throughput(imp, &m);
                t.row(tables::throughput_row(&name, &m));
                if let Some(d) = &m.disk {
                    t.row(tables::disk_row(d));
                }
            }
            Err(e) => t.row(failed_row(&name, &e)),
        }
    }
    t
}

/// Redis's time by script: the fire rate with 3 nodes and single adds
/// from `p.threads` threads, each under the slow log.
fn script_cost_table(p: &ThroughputParams, url: &str, progress: &Progress) -> Table {
    let mut t = cost_table::script_cost(p);
    let fire = format!("fire, 3 nodes, {} timers", fmt_count(p.fire));
    progress.say(format!("durable script cost: {fire}{}", load()));
    match script_cost::fire(url, 3, p.fire) {
        Ok(f) => {
            cost_table::script_cost_rows(&fire, &f.costs, true)
                .into_iter()
                .for_each(|r| t.row(r));
            let rates = Some((&f.without, &f.with));
            t.notes
                .push(cost_table::script_cost_note(&fire, &f.costs, rates));
        }
        Err(e) => t.row(failed_row(&fire, &e)),
    }
    let adds = format!("adds, {} threads", p.threads);
    progress.say(format!("durable script cost: {adds}{}", load()));
    match script_cost::adds(url, p.threads, p.add_for) {
        Ok(a) => {
            cost_table::script_cost_rows(&adds, &a.costs, false)
                .into_iter()
                .for_each(|r| t.row(r));
            let note = cost_table::script_cost_note(&adds, &a.costs, None);
            t.notes.push(format!("{note} {:.0} adds/s.", a.per_sec));
        }
        Err(e) => t.row(failed_row(&adds, &e)),
    }
    t
}

/// Adds while nodes fire: timers an hour out, then timers due soon, each
/// on an emptied server with nodes of their own.
fn near_far_table(
    p: &NearFarParams,
    url: &str,
    progress: &Progress,
    figures: &mut Figures,
) -> Table {
    let mut t = tables::near_far(p);
    let name = Impl::Redis { nodes: p.nodes }.name();
    for near in [false, true] {
        let what = tables::near_far_due(p, near);
        progress.say(format!("durable adds while firing: {what}{}", load()));
        let _ = flush(url);
        match nearfar::run(url, p, near) {
            Ok(r) => {
                figures.near_far(near, &r);
                t.row(tables::near_far_row(&name, &what, &r));
            }
            Err(e) => t.row(failed_row(&name, &e)),
        }
    }
    let _ = flush(url);
    t
}

/// Single adds of timers due soon while nodes fire them, on an emptied
/// server, and the targets row.
fn adds_firing_table(p: &AddsFiringParams, url: &str, progress: &Progress) -> Table {
    let mut t = tables::adds_firing(p);
    let name = Impl::Redis { nodes: p.nodes }.name();
    progress.say(format!("durable single adds of timers due soon{}", load()));
    let _ = flush(url);
    match adds_firing::run(url, p) {
        Ok(r) => {
            t.row(tables::adds_firing_row(&name, &r));
            t.row(tables::adds_firing_targets(&r));
        }
        Err(e) => t.row(failed_row(&name, &e)),
    }
    let _ = flush(url);
    t
}

/// One namespace on a fresh cluster: on one master, then partitioned over
/// every master.
fn cluster_table(p: &ClusterParams, progress: &Progress) -> Table {
    let mut t = cluster_table::cluster(p);
    let masters = u32::try_from(p.masters).unwrap_or(u32::MAX);
    for partitions in [1, masters] {
        progress.say(format!(
            "durable on a Redis Cluster: {partitions} partition(s){}",
            load()
        ));
        match cluster::run(p, partitions) {
            Ok(r) => t.row(cluster_table::cluster_row(&r)),
            Err(e) => t.row(failed_row(&format!("{partitions} partition(s)"), &e)),
        }
    }
    t
}

fn restart_table(p: &ThroughputParams, progress: &Progress) -> Table {
    let mut t = tables::restart(p);
    progress.say(format!(
        "durable restart: {} pending in the embedded store{}",
        fmt_count(p.restart),
        load()
    ));
    match throughput::restart(p) {
        Ok(r) => t.row(restart_row(&r)),
        Err(e) => t.row(failed_row("ours, embedded", &e)),
    }
    t
}

fn restart_row(r: &Restart) -> Vec<String> {
    vec![
        "ours, embedded".into(),
        fmt_count(r.pending),
        fmt_count(r.overdue),
        format!("{:.0}", r.fill_rate),
        format!("{:.1}", r.file_bytes as f64 / 1e6),
        ms(r.build),
        ms(r.first),
        ms(r.all_overdue),
        r.check.label(),
    ]
}

/// Outages (Redis only: the embedded store has no server to lose) and
/// shutdowns holding claims.
fn outage_table(p: &OutageParams, url: Option<&str>, progress: &Progress) -> Table {
    let mut t = tables::outage(p);
    let row = |store: &str, case: &str, what: &str, ms: String, check: Check| {
        vec![store.into(), case.into(), what.into(), ms, check.label()]
    };
    let held = format!("shutdown holding {} claims", fmt_count(p.claimed));
    if url.is_some() {
        progress.say(format!("durable outages: Redis{}", load()));
        match outage::unreachable(p) {
            Ok(d) => t.row(row(
                "Redis",
                "unreachable",
                "`build()` until `Unavailable`",
                ms(d),
                Check::Passed,
            )),
            Err(e) => t.row(row(
                "Redis",
                "unreachable",
                "`build()`",
                "-".into(),
                Check::Failed(e),
            )),
        }
        match outage::redis_outage(p) {
            Ok(o) => {
                let (max, p50) = o.stats_max_p50();
                let check = o.check();
                let stats = format!("{} ({})", ms(max), ms(p50));
                t.row(row(
                    "Redis",
                    "killed",
                    "`stats()`, slowest (median)",
                    stats,
                    check,
                ));
                let add = ms(o.add_unavailable);
                t.row(row(
                    "Redis",
                    "killed",
                    "`add_at` until `Unavailable`",
                    add,
                    Check::Passed,
                ));
                let back = ms(o.counts_back);
                t.row(row(
                    "Redis",
                    "restarted",
                    "until fresh counts",
                    back,
                    Check::Passed,
                ));
                let add = ms(o.add_back);
                t.row(row(
                    "Redis",
                    "restarted",
                    "until an `add_at` succeeds",
                    add,
                    Check::Passed,
                ));
            }
            Err(e) => t.row(row("Redis", "killed", "-", "-".into(), Check::Failed(e))),
        }
    }
    let mut stores = vec![("embedded", ShutdownStore::Embedded, "`shutdown()`")];
    if let Some(url) = url {
        let _ = flush(url);
        stores.push(("Redis", ShutdownStore::Redis(url), "`shutdown()`"));
        stores.push((
            "Redis",
            ShutdownStore::RedisKilled,
            "`shutdown()`, server killed first",
        ));
    }
    for (store, on, what) in stores {
        progress.say(format!("durable shutdown: {store}, {what}{}", load()));
        match outage::shutdown(p, on) {
            Ok(s) => t.row(row(store, &held, what, ms(s.took), s.check())),
            Err(e) => t.row(row(store, &held, what, "-".into(), Check::Failed(e))),
        }
    }
    if let Some(url) = url {
        let _ = flush(url);
    }
    t
}
