//! The whole comparison: settings for `--quick` and the full run, the runners
//! that repeat each measurement and take medians, and the tables and chart built
//! from the results.

use crate::chart::{Panel, Series};
use crate::peers::Peer;
use crate::report::{ms, ns, ratio, Table};
use crate::stats::median;
use crate::threaded::ThreadedPeer;
use crate::workloads::delay_queue::{DqPeer, TAKE_SPAN_MS};
use crate::workloads::single::{self, Churn, Inputs, CHURN_MAX, CHURN_MIN, SPAN, STEPS_PER_TICK};
use crate::workloads::threaded::{self, IdleParams, LatenessParams, CANCEL_LAG};
use crate::workloads::Check;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Which parts to run.
#[derive(Debug, Clone, Copy)]
pub struct Sections {
    /// insert+cancel, insert+expire, churn.
    pub single: bool,
    /// Bytes per pending timer, single-threaded.
    pub memory: bool,
    /// Schedule+cancel, lateness, idle.
    pub threaded: bool,
    /// `DelayQueue` push+take and push+remove.
    pub delay_queue: bool,
}

impl Sections {
    /// Everything.
    pub const ALL: Sections = Sections {
        single: true,
        memory: true,
        threaded: true,
        delay_queue: true,
    };
}

/// Sizes and repetitions.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `--quick`?
    pub quick: bool,
    /// Numbers of timers for the single-threaded workloads (pending timers for churn).
    pub sizes: Vec<usize>,
    /// Runs per measurement (median taken) up to 1M timers...
    pub runs: usize,
    /// ...and above.
    pub runs_large: usize,
    /// Churn steps timed per run.
    pub churn_steps: usize,
    /// Timers for the memory figure.
    pub memory_n: usize,
    /// A run estimated longer than this is skipped (seconds).
    pub max_run_secs: f64,
    /// A run estimated to need more heap than this is skipped (bytes).
    pub max_bytes: f64,
    /// Schedule+cancel pairs per producer.
    pub sc_pairs: usize,
    /// Schedule+cancel runs (median taken).
    pub sc_runs: usize,
    /// Lateness under load.
    pub load: LatenessParams,
    /// Lateness, sparse.
    pub sparse: LatenessParams,
    /// Idle CPU and memory.
    pub idle: IdleParams,
    /// `DelayQueue` item counts.
    pub dq_sizes: Vec<usize>,
    /// `DelayQueue` runs (median taken).
    pub dq_runs: usize,
    /// What to run.
    pub sections: Sections,
}

const GIB: f64 = (1u64 << 30) as f64;

impl Settings {
    /// The README's command: small sizes, well under a minute on 2 cores.
    pub fn quick() -> Settings {
        Settings {
            quick: true,
            sizes: vec![10_000, 100_000],
            runs: 3,
            runs_large: 3,
            churn_steps: 200_000,
            memory_n: 1_000_000,
            max_run_secs: 60.0,
            max_bytes: 8.0 * GIB,
            sc_pairs: 100_000,
            sc_runs: 1,
            load: LatenessParams {
                timers: 200_000,
                window: Duration::from_millis(400),
                lead: Duration::from_millis(400),
                producers: 2,
                grace: Duration::from_secs(2),
                seed: 51,
            },
            sparse: LatenessParams {
                timers: 400,
                window: Duration::from_millis(400),
                lead: Duration::from_millis(50),
                producers: 2,
                grace: Duration::from_secs(1),
                seed: 52,
            },
            idle: IdleParams {
                far: 100_000,
                idle_window: Duration::from_millis(700),
                near_window: Duration::from_millis(700),
                near: 7,
            },
            dq_sizes: vec![100_000],
            dq_runs: 3,
            sections: Sections::ALL,
        }
    }

    /// The full sizes of the issue: N = 10K, 1M, 10M (plus 1K and 100K for the chart).
    pub fn full() -> Settings {
        Settings {
            quick: false,
            sizes: vec![1_000, 10_000, 100_000, 1_000_000, 10_000_000],
            runs: 5,
            runs_large: 3,
            churn_steps: 2_000_000,
            memory_n: 1_000_000,
            max_run_secs: 60.0,
            max_bytes: 8.0 * GIB,
            sc_pairs: 1_000_000,
            sc_runs: 3,
            load: LatenessParams {
                timers: 1_000_000,
                window: Duration::from_secs(2),
                lead: Duration::from_secs(1),
                producers: 2,
                grace: Duration::from_secs(5),
                seed: 51,
            },
            sparse: LatenessParams {
                timers: 2_000,
                window: Duration::from_secs(2),
                lead: Duration::from_millis(200),
                producers: 2,
                grace: Duration::from_secs(2),
                seed: 52,
            },
            idle: IdleParams {
                far: 1_000_000,
                idle_window: Duration::from_secs(5),
                near_window: Duration::from_secs(5),
                near: 10,
            },
            dq_sizes: vec![10_000, 1_000_000],
            dq_runs: 5,
            sections: Sections::ALL,
        }
    }
}

/// Progress lines on stderr, stamped with the time since the run started.
pub struct Progress {
    start: Instant,
}

impl Progress {
    /// Start the clock.
    pub fn new() -> Progress {
        Progress {
            start: Instant::now(),
        }
    }

    /// Time since the run started.
    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// Print one line.
    pub fn say(&self, what: impl AsRef<str>) {
        eprintln!(
            "[{:>6.1}s] {}",
            self.start.elapsed().as_secs_f64(),
            what.as_ref()
        );
    }
}

impl Default for Progress {
    fn default() -> Self {
        Self::new()
    }
}

/// The single-threaded workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Workload {
    /// insert+cancel.
    InsertCancel,
    /// insert+expire.
    InsertExpire,
    /// churn.
    Churn,
}

impl Workload {
    /// All three, in table order.
    pub const ALL: [Workload; 3] = [
        Workload::InsertCancel,
        Workload::InsertExpire,
        Workload::Churn,
    ];

    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            Workload::InsertCancel => "insert+cancel",
            Workload::InsertExpire => "insert+expire",
            Workload::Churn => "churn",
        }
    }

    fn unit(self) -> &'static str {
        match self {
            Workload::InsertCancel => "ns per insert+cancel pair",
            Workload::InsertExpire => "ns per timer (insert, then fired)",
            Workload::Churn => "ns per churn step (one cancel + one insert)",
        }
    }

    fn seed(self, n: usize) -> u64 {
        ((self as u64 + 1) * 1_000_003) ^ n as u64
    }

    /// One run of this workload on `peer` with `n` timers.
    pub fn run_once(
        self,
        peer: Peer,
        n: usize,
        settings: &Settings,
        inputs: Option<&Inputs>,
    ) -> single::Outcome {
        match self {
            Workload::InsertCancel => {
                let inputs = inputs.expect("inputs drawn");
                crate::with_peer!(peer, n, |q| single::insert_cancel(q, inputs))
            }
            Workload::InsertExpire => {
                let inputs = inputs.expect("inputs drawn");
                crate::with_peer!(peer, n, |q| single::insert_expire(q, inputs))
            }
            Workload::Churn => {
                let p = Churn::new(n, settings.churn_steps, self.seed(n));
                crate::with_peer!(peer, n, |q| single::churn(q, &p))
            }
        }
    }
}

/// One table cell of a single-threaded workload.
#[derive(Debug, Clone)]
pub struct Cell {
    /// Median ns per op, if run.
    pub ns: Option<f64>,
    /// Why it was skipped.
    pub skipped: Option<String>,
    /// Merged check of the runs.
    pub check: Check,
}

/// All results of a run, for tables and the chart.
#[derive(Debug, Default)]
pub struct Results {
    /// (workload, peer, n) -> cell.
    pub single: HashMap<(Workload, Peer, usize), Cell>,
    /// peer -> (bytes per timer, check).
    pub memory: HashMap<Peer, (f64, Check)>,
    /// The tables, in order.
    pub tables: Vec<Table>,
    /// The chart panels.
    pub panels: Vec<Panel>,
}

/// Run the memory workload for every peer.
pub fn run_memory(s: &Settings, progress: &Progress, results: &mut Results) {
    let n = s.memory_n;
    let inputs = Inputs::new(n, 4_000_037);
    let mut table = Table::new(
        &format!("Memory: live heap bytes per pending timer ({} timers, u64 payload)", fmt_count(n)),
        "Bytes allocated minus bytes freed while the structure was built and filled, divided by the \
         number of timers (counting global allocator). Caller-side handles are not counted. Structures \
         that can be pre-sized were (`with_capacity`); `BTreeMap` and hhwt cannot be.",
        &["implementation", "bytes/timer", "vs ours", "check"],
    );
    let mut ours = f64::NAN;
    for peer in Peer::ALL {
        progress.say(format!("memory {}: {}", fmt_count(n), peer.name()));
        let (bytes, check) = crate::with_peer_maker!(peer, n, |make| single::memory(make, &inputs));
        if peer == Peer::Wheel {
            ours = bytes;
        }
        table.row(vec![
            peer.name().into(),
            format!("{bytes:.1}"),
            ratio(bytes, ours),
            check.label(),
        ]);
        results.memory.insert(peer, (bytes, check));
    }
    results.tables.push(table);
}

/// Run insert+cancel, insert+expire and churn for every peer and size.
///
/// Our wheel and the floor are measured together, their runs alternated
/// (ours, floor, ours, floor, ...): the targets are ratios of the two, and
/// this machine's speed drifts by up to 2x within minutes, so two medians
/// taken a dozen seconds apart could each catch a different state.
pub fn run_single(s: &Settings, progress: &Progress, results: &mut Results) {
    // Peers measured together, in table order (the floor goes with ours).
    let groups: Vec<Vec<Peer>> = Peer::ALL
        .iter()
        .filter(|&&p| p != Peer::Floor)
        .map(|&p| {
            if p == Peer::Wheel {
                vec![Peer::Wheel, Peer::Floor]
            } else {
                vec![p]
            }
        })
        .collect();
    for w in Workload::ALL {
        // (peer) -> (n, wall seconds of one run) of the last size run.
        let mut last: HashMap<Peer, (usize, f64)> = HashMap::new();
        for &n in &s.sizes {
            let inputs = match w {
                Workload::Churn => None,
                _ => Some(Inputs::new(n, w.seed(n))),
            };
            for group in &groups {
                let label = |peer: Peer| format!("{} N={} {}", w.name(), fmt_count(n), peer.name());
                let mut peers = Vec::new();
                for &peer in group {
                    if let Some(why) = skip_reason(s, results, peer, n, last.get(&peer).copied()) {
                        progress.say(format!("{}: skipped ({why})", label(peer)));
                        results.single.insert(
                            (w, peer, n),
                            Cell {
                                ns: None,
                                skipped: Some(why),
                                check: Check::NotApplicable,
                            },
                        );
                    } else {
                        peers.push(peer);
                    }
                }
                let runs = if n > 1_000_000 { s.runs_large } else { s.runs };
                if n <= WARM_UP_MAX_N {
                    // Untimed: whoever runs first would otherwise pay for the
                    // allocator's first touch of fresh pages.
                    for &peer in &peers {
                        let o = w.run_once(peer, n, s, inputs.as_ref());
                        progress.say(format!(
                            "{}: warm-up: {} ns/op",
                            label(peer),
                            ns(o.ns_per_op)
                        ));
                    }
                }
                let mut samples = vec![Vec::with_capacity(runs); peers.len()];
                let mut checks: Vec<Option<Check>> = vec![None; peers.len()];
                let mut walls = vec![0.0f64; peers.len()];
                for r in 0..runs {
                    for (i, &peer) in peers.iter().enumerate() {
                        let o = w.run_once(peer, n, s, inputs.as_ref());
                        samples[i].push(o.ns_per_op);
                        walls[i] = walls[i].max(o.wall.as_secs_f64());
                        checks[i] = Some(match checks[i].take() {
                            None => o.check,
                            Some(c) => c.merge(o.check),
                        });
                        progress.say(format!(
                            "{}: run {}/{runs}: {} ns/op",
                            label(peer),
                            r + 1,
                            ns(o.ns_per_op)
                        ));
                    }
                }
                for (i, &peer) in peers.iter().enumerate() {
                    last.insert(peer, (n, walls[i]));
                    results.single.insert(
                        (w, peer, n),
                        Cell {
                            ns: Some(median(&samples[i])),
                            skipped: None,
                            check: checks[i].take().unwrap_or(Check::NotApplicable),
                        },
                    );
                }
            }
        }
        results.tables.push(single_table(s, results, w));
        results.panels.push(single_panel(s, results, w));
    }
}

/// Up to this many timers each measurement starts with one untimed run.
const WARM_UP_MAX_N: usize = 1_000_000;

/// Why a run of `peer` at `n` timers should be skipped, if it should.
fn skip_reason(
    s: &Settings,
    results: &Results,
    peer: Peer,
    n: usize,
    last: Option<(usize, f64)>,
) -> Option<String> {
    if let Some((bytes, _)) = results.memory.get(&peer) {
        let need = bytes * n as f64;
        if need > s.max_bytes {
            return Some(format!(
                "est. {:.1} GiB > {:.0} GiB",
                need / GIB,
                s.max_bytes / GIB
            ));
        }
    }
    if let Some((prev_n, prev_wall)) = last {
        // Scale the previous size's run time, with a margin for cache effects.
        let est = prev_wall * n as f64 / prev_n as f64 * 1.3;
        if est > s.max_run_secs {
            return Some(format!("est. {est:.0} s per run > {:.0} s", s.max_run_secs));
        }
    }
    None
}

fn single_table(s: &Settings, results: &Results, w: Workload) -> Table {
    let mut header: Vec<String> = vec!["implementation".into()];
    for &n in &s.sizes {
        header.push(format!("N={}", fmt_count(n)));
        header.push("vs ours".into());
    }
    header.push("check".into());
    let intro = match w {
        Workload::InsertCancel => format!(
            "N timers due uniformly over 1..={SPAN} ticks (1 tick = 1 ms), all cancelled in a random order, \
             then the clock moved past the last deadline (nothing may fire; lazy designs pay for their \
             tombstones there). Median of {}; {}.",
            runs_text(s),
            w.unit()
        ),
        Workload::InsertExpire => format!(
            "N timers due uniformly over 1..={SPAN} ticks, then one advance to {SPAN} firing all; checked: \
             each fired once, in deadline order. Median of {}; {}.",
            runs_text(s),
            w.unit()
        ),
        Workload::Churn => format!(
            "N pending connection timeouts; each step cancels a random connection's timer and re-arms it \
             {CHURN_MIN}..={CHURN_MAX} ticks ahead; the clock moves one tick every {STEPS_PER_TICK} steps, \
             firing what is due (checked: not early, not stale, nothing due left). {} steps timed per run, \
             median of {}; {}.",
            fmt_count(s.churn_steps),
            runs_text(s),
            w.unit()
        ),
    };
    let mut t = Table {
        title: format!("{} ({})", w.name(), w.unit()),
        intro,
        header,
        rows: Vec::new(),
        notes: Vec::new(),
    };
    for peer in Peer::ALL {
        let mut row = vec![peer.name().to_string()];
        let mut check = Check::Passed;
        let mut any = false;
        for &n in &s.sizes {
            let ours = results
                .single
                .get(&(w, Peer::Wheel, n))
                .and_then(|c| c.ns)
                .unwrap_or(f64::NAN);
            match results.single.get(&(w, peer, n)) {
                Some(Cell {
                    ns: Some(v),
                    check: c,
                    ..
                }) => {
                    row.push(ns(*v));
                    row.push(ratio(*v, ours));
                    check = check.merge(c.clone());
                    any = true;
                }
                Some(Cell {
                    skipped: Some(why), ..
                }) => {
                    row.push(format!("skipped: {why}"));
                    row.push("-".into());
                }
                _ => {
                    row.push("-".into());
                    row.push("-".into());
                }
            }
        }
        if !any {
            check = Check::NotApplicable;
        }
        row.push(check.label());
        t.row(row);
    }
    let floors: Vec<String> = s
        .sizes
        .iter()
        .filter_map(|&n| {
            let ours = results.single.get(&(w, Peer::Wheel, n))?.ns?;
            let floor = results.single.get(&(w, Peer::Floor, n))?.ns?;
            Some(format!("{:.2}x at {}", ours / floor, fmt_count(n)))
        })
        .collect();
    if !floors.is_empty() {
        t.notes.push(format!("ours / floor: {}", floors.join(", ")));
    }
    t.notes
        .push("\"vs ours\" is the implementation's cost divided by ours: above 1.00x means slower than ours.".into());
    t
}

fn single_panel(s: &Settings, results: &Results, w: Workload) -> Panel {
    Panel {
        title: format!("{} (ns/op)", w.name()),
        series: Peer::ALL
            .iter()
            .map(|&peer| Series {
                name: peer.name().to_string(),
                points: s
                    .sizes
                    .iter()
                    .filter_map(|&n| Some((n as f64, results.single.get(&(w, peer, n))?.ns?)))
                    .collect(),
            })
            .collect(),
    }
}

/// Run the threaded workloads for every threaded peer.
pub fn run_threaded(s: &Settings, progress: &Progress, results: &mut Results) {
    let mut sc = Table::new(
        "Threaded schedule+cancel (real clock)",
        &format!(
            "Each producer thread schedules {} timers due 10-20 s out and cancels each one after \
             scheduling the next {CANCEL_LAG}. Producer: wall time per pair seen by the producer (mean \
             over producers). CPU: whole-process CPU per pair from the start until the service went \
             quiet (per-thread time on CPU from /proc, ns resolution; producers report their own). \
             Median of {} run(s).",
            fmt_count(s.sc_pairs),
            s.sc_runs
        ),
        &[
            "implementation",
            "1 producer ns/pair",
            "vs ours",
            "CPU ns/pair",
            "2 producers ns/pair",
            "vs ours",
            "CPU ns/pair",
            "check",
        ],
    );
    let mut ours_sc = [f64::NAN; 2];
    for peer in ThreadedPeer::ALL {
        let mut row = vec![peer.name().to_string()];
        let mut check = Check::Passed;
        for (i, producers) in [1usize, 2].into_iter().enumerate() {
            let mut prod = Vec::new();
            let mut cpu = Vec::new();
            for r in 0..s.sc_runs {
                let o = crate::with_threaded!(peer, |T| threaded::sched_cancel::<T>(
                    producers,
                    s.sc_pairs,
                    61 + r as u64
                ));
                progress.say(format!(
                    "schedule+cancel {producers}p {}: run {}/{}: {} ns/pair, CPU {} ns/pair",
                    peer.name(),
                    r + 1,
                    s.sc_runs,
                    ns(o.producer_ns_per_pair),
                    ns(o.cpu_ns_per_pair)
                ));
                prod.push(o.producer_ns_per_pair);
                cpu.push(o.cpu_ns_per_pair);
                check = check.merge(o.check);
            }
            let (p, c) = (median(&prod), median(&cpu));
            if peer == ThreadedPeer::Scheduler {
                ours_sc[i] = p;
            }
            row.push(ns(p));
            row.push(ratio(p, ours_sc[i]));
            row.push(ns(c));
        }
        row.push(check.label());
        sc.row(row);
    }
    results.tables.push(sc);

    for (params, title) in [
        (&s.load, "Lateness under load"),
        (&s.sparse, "Lateness, sparse"),
    ] {
        let mut t = Table::new(
            &format!(
                "{title}: {} timers due evenly over {} ms from {} producers",
                fmt_count(params.timers),
                params.window.as_millis(),
                params.producers
            ),
            &format!(
                "Lateness = callback start minus the requested instant, in ms (negative: early). The window starts {} ms after \
                 the producers start (\"scheduling\" is how long the slowest producer took; past that, timers \
                 came due while still being scheduled). Early: callbacks that started before their instant \
                 (the largest earliness in brackets). Lost: never ran within {} s after the window.",
                params.lead.as_millis(),
                params.grace.as_secs()
            ),
            &[
                "implementation",
                "p50",
                "p99",
                "p99.9",
                "max",
                "early",
                "lost",
                "scheduling ms",
                "check",
            ],
        );
        for peer in ThreadedPeer::ALL {
            progress.say(format!("{title} {}", peer.name()));
            let l = crate::with_threaded!(peer, |T| threaded::lateness::<T>(params));
            let early = if l.early > 0 {
                format!("{} ({} ms)", l.early, ms(l.max_early))
            } else {
                "0".into()
            };
            t.row(vec![
                peer.name().into(),
                signed_ms(l.p50),
                signed_ms(l.p99),
                signed_ms(l.p999),
                signed_ms(l.max),
                early,
                l.lost.to_string(),
                format!("{:.0}", l.scheduling.as_secs_f64() * 1e3),
                l.check.label(),
            ]);
        }
        results.tables.push(t);
    }

    let p = &s.idle;
    let mut t = Table::new(
        &format!("Idle: {} timers an hour out", fmt_count(p.far)),
        &format!(
            "Bytes: live heap per pending timer, the boxed closure (8 bytes captured) and any per-timer \
             handle allocation included. Idle CPU: whole-process CPU over {} ms with only those timers \
             pending, as % of one core. Near: the same while {} timers come due within {} ms (no \
             spinning expected).",
            p.idle_window.as_millis(),
            p.near,
            p.near_window.as_millis()
        ),
        &["implementation", "bytes/timer", "vs ours", "idle CPU %", "near CPU %", "check"],
    );
    let mut ours_bytes = f64::NAN;
    for peer in ThreadedPeer::ALL {
        progress.say(format!("idle {}", peer.name()));
        let i = crate::with_threaded!(peer, |T| threaded::idle::<T>(p, 71));
        if peer == ThreadedPeer::Scheduler {
            ours_bytes = i.bytes_per_timer;
        }
        t.row(vec![
            peer.name().into(),
            format!("{:.1}", i.bytes_per_timer),
            ratio(i.bytes_per_timer, ours_bytes),
            format!("{:.2}", i.idle_cpu_pct),
            format!("{:.2}", i.near_cpu_pct),
            i.check.label(),
        ]);
    }
    results.tables.push(t);
}

/// Items a `DelayQueue` measurement covers at least, per queue: small
/// sizes get more runs (a 10K run lasts well under a millisecond, so five of
/// them are at the mercy of one interrupt or one slow stretch of the
/// machine; a hundred alternated runs are not).
pub const DQ_MIN_ITEMS: usize = 1_000_000;

/// Runs of a `DelayQueue` measurement at `n` items: at least `runs`, and
/// enough to cover [`DQ_MIN_ITEMS`].
pub fn dq_runs_for(n: usize, runs: usize) -> usize {
    match n {
        0 => runs,
        n => runs.max(DQ_MIN_ITEMS.div_ceil(n)),
    }
}

/// Run the `DelayQueue` comparison.
pub fn run_delay_queue(s: &Settings, progress: &Progress, results: &mut Results) {
    let mut header: Vec<String> = vec!["implementation".into()];
    for &n in &s.dq_sizes {
        for what in ["push+take", "push+remove"] {
            header.push(format!("{what} N={}", fmt_count(n)));
            header.push("vs ours".into());
        }
    }
    header.push("check".into());
    let mut t = Table {
        title: "DelayQueue (ns per item)".into(),
        intro: format!(
            "push+take: push N items with delays rising evenly from 1 to {TAKE_SPAN_MS} ms, move the \
             clock past the last (not timed), take all without blocking (checked: each once, in deadline \
             order, none before due). push+remove: push N items due over 1..={SPAN} ms, remove all in a \
             random order. Both queues run on a clock moved by hand: ours on `wheel::ManualClock`, \
             tokio-util's on a paused tokio clock. Each queue is used two ways: by one owner (`&mut`: \
             ours through `DelayQueue::exclusive`, without its lock; tokio-util's as it always is) and \
             shared (`&self`: ours through its own methods, each taking its lock; tokio-util's inside a \
             `std::sync::Mutex`). \"vs ours\" compares with our queue used the same way. Median of the \
             runs ({}) after an untimed warm-up run, the four runs alternated.",
            dq_runs_text(s)
        ),
        header,
        rows: Vec::new(),
        notes: Vec::new(),
    };
    // Both queues are measured together, their runs alternated, so that
    // the ratio compares the same stretch of this machine's (drifting)
    // speed: (peer, n, what) -> median.
    let mut medians: HashMap<(DqPeer, usize, usize), f64> = HashMap::new();
    let mut checks: HashMap<DqPeer, Check> = HashMap::new();
    for &n in &s.dq_sizes {
        for what in 0..2 {
            let run = |peer: DqPeer, seed: u64| {
                if what == 0 {
                    peer.push_take(n)
                } else {
                    peer.push_remove(n, seed)
                }
            };
            let mut samples: HashMap<DqPeer, Vec<f64>> = HashMap::new();
            // One untimed warm-up run first, as for the single-threaded
            // workloads: a 10K run lasts under a millisecond, so a cold
            // allocator (fresh pages) would otherwise weigh on it.
            for peer in DqPeer::ALL {
                fold_check(&mut checks, peer, run(peer, 80).check);
            }
            let runs = dq_runs_for(n, s.dq_runs);
            for r in 0..runs {
                for peer in DqPeer::ALL {
                    let o = run(peer, 81 + r as u64);
                    samples.entry(peer).or_default().push(o.ns_per_item);
                    fold_check(&mut checks, peer, o.check);
                }
            }
            for (peer, v) in samples {
                let m = median(&v);
                progress.say(format!(
                    "DelayQueue {} N={} {}: median of {runs} runs: {} ns/item",
                    ["push+take", "push+remove"][what],
                    fmt_count(n),
                    peer.name(),
                    ns(m)
                ));
                medians.insert((peer, n, what), m);
            }
        }
    }
    for peer in DqPeer::ALL {
        let mut row = vec![peer.name().to_string()];
        for &n in &s.dq_sizes {
            for what in 0..2 {
                let m = medians[&(peer, n, what)];
                let ours = medians[&(peer.compared_with(), n, what)];
                row.push(ns(m));
                row.push(ratio(m, ours));
            }
        }
        row.push(checks.remove(&peer).unwrap_or(Check::NotApplicable).label());
        t.row(row);
    }
    results.tables.push(t);
}

/// How many runs each `DelayQueue` median takes, for the table's intro.
fn dq_runs_text(s: &Settings) -> String {
    let parts: Vec<String> = s
        .dq_sizes
        .iter()
        .map(|&n| format!("{} at N={}", dq_runs_for(n, s.dq_runs), fmt_count(n)))
        .collect();
    format!(
        "{}: at least {}, and enough to cover {} items",
        parts.join(", "),
        s.dq_runs,
        fmt_count(DQ_MIN_ITEMS)
    )
}

/// Merges `check` into `peer`'s check so far (none yet counts as passed).
fn fold_check(checks: &mut HashMap<DqPeer, Check>, peer: DqPeer, check: Check) {
    let so_far = checks.remove(&peer).unwrap_or(Check::Passed);
    checks.insert(peer, so_far.merge(check));
}

/// Run the layout comparison: our wheel with several level layouts on the three
/// single-threaded workloads at `n` timers.
pub fn run_layouts(n: usize, runs: usize, churn_steps: usize, progress: &Progress) -> Table {
    use crate::peers::wheel::OurWheel;
    use wheel::WheelConfig;
    let layouts: Vec<Vec<u32>> = vec![
        vec![6; 6],
        vec![6; 10],
        vec![6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 4],
        vec![6; 11],
        vec![8; 8],
        vec![10; 6],
        vec![10, 10, 10, 10, 10, 10, 4],
        vec![12, 12, 12, 12, 16],
        vec![16; 4],
    ];
    let mut t = Table::new(
        &format!("Wheel layouts at N={}", fmt_count(n)),
        &format!(
            "Our wheel built with `WheelConfig::new(&layout)` (not pre-sized), on the three \
             single-threaded workloads; ns per op, median of {runs} runs after one untimed warm-up \
             run; churn times {} steps.",
            fmt_count(churn_steps)
        ),
        &[
            "layout",
            "bits",
            "insert+cancel",
            "insert+expire",
            "churn",
            "check",
        ],
    );
    let inputs = Inputs::new(n, 9_001);
    for layout in layouts {
        let name = format!("{layout:?}");
        let bits: u32 = layout.iter().sum();
        let config = match WheelConfig::new(&layout) {
            Ok(c) => c,
            Err(e) => {
                t.row(vec![
                    name,
                    bits.to_string(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    format!("rejected: {e}"),
                ]);
                continue;
            }
        };
        let mut row = vec![name.clone(), bits.to_string()];
        let mut check = Check::Passed;
        for w in Workload::ALL {
            let mut samples = Vec::new();
            // One untimed warm-up run first (see `run_single`).
            for r in 0..=runs {
                let q = OurWheel::with_config(config.clone());
                let o = match w {
                    Workload::InsertCancel => single::insert_cancel(q, &inputs),
                    Workload::InsertExpire => single::insert_expire(q, &inputs),
                    Workload::Churn => single::churn(q, &Churn::new(n, churn_steps, 9_002)),
                };
                if r > 0 {
                    samples.push(o.ns_per_op);
                }
                check = check.merge(o.check);
            }
            let m = median(&samples);
            progress.say(format!("layout {name} {}: {} ns/op", w.name(), ns(m)));
            row.push(ns(m));
        }
        row.push(check.label());
        t.row(row);
    }
    t
}

/// "5 runs (3 above 1M timers)" for the table intros.
fn runs_text(s: &Settings) -> String {
    let big = s.sizes.iter().any(|&n| n > WARM_UP_MAX_N);
    let runs = if big {
        format!(
            "{} runs after an untimed warm-up run ({} runs, no warm-up, above 1M timers)",
            s.runs, s.runs_large
        )
    } else {
        format!("{} runs after an untimed warm-up run", s.runs)
    };
    format!("{runs}, ours and the floor's runs alternated")
}

/// Signed nanoseconds as milliseconds with three decimals.
fn signed_ms(v: i64) -> String {
    format!("{:.3}", v as f64 / 1e6)
}

/// "10K", "1M", "1.5M" for titles.
pub fn fmt_count(n: usize) -> String {
    if n >= 1_000_000 && n % 1_000_000 == 0 {
        format!("{}M", n / 1_000_000)
    } else if n >= 1_000 && n % 1_000 == 0 {
        format!("{}K", n / 1_000)
    } else {
        n.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts() {
        assert_eq!(fmt_count(10_000), "10K");
        assert_eq!(fmt_count(10_000_000), "10M");
        assert_eq!(fmt_count(1_500), "1500");
    }

    #[test]
    fn small_delay_queue_sizes_get_more_runs() {
        assert_eq!(dq_runs_for(10_000, 5), 100);
        assert_eq!(dq_runs_for(1_000_000, 5), 5);
        assert_eq!(dq_runs_for(3_000_000, 5), 5);
        assert_eq!(dq_runs_for(300_000, 3), 4);
        assert_eq!(dq_runs_for(0, 3), 3);
        let mut s = Settings::quick();
        s.dq_sizes = vec![10_000, 1_000_000];
        s.dq_runs = 5;
        assert_eq!(
            dq_runs_text(&s),
            "100 at N=10K, 5 at N=1M: at least 5, and enough to cover 1M items"
        );
    }

    #[test]
    fn skips_by_memory_and_by_time() {
        let s = Settings::quick();
        let mut r = Results::default();
        r.memory.insert(Peer::Hhwt, (1000.0, Check::Passed));
        assert!(skip_reason(&s, &r, Peer::Hhwt, 10_000_000, None)
            .unwrap()
            .contains("GiB"));
        assert!(skip_reason(&s, &r, Peer::Wheel, 10_000_000, None).is_none());
        let why = skip_reason(&s, &r, Peer::Wheel, 10_000_000, Some((1_000_000, 10.0)));
        assert!(why.unwrap().contains("> 60 s"));
        assert!(skip_reason(&s, &r, Peer::Wheel, 10_000_000, Some((1_000_000, 1.0))).is_none());
    }
}
