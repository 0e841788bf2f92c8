//! The whole comparison: settings for `--quick` and the full run, the runners
//! that repeat each measurement and take medians, and the tables and chart
//! built from the results.
//!
//! One file per section of the report, each with its runner and its
//! table(s): [`run_memory`], [`run_single`] (insert+cancel, insert+expire,
//! churn), [`run_threaded`], [`run_delay_queue`], [`run_http`], [`run_durable`], [`run_flows`], [`run_server`], [`run_schedules`], and
//! [`run_layouts`] (its own mode). A runner appends its tables (and chart panels) to [`Results`]
//! in report order; [`run_memory`] must come before [`run_single`], whose
//! skip estimates read its figures.

mod delay_queue;
mod durable;
mod flows;
mod http;
mod layouts;
mod memory;
mod schedules;
mod server;
mod single;
mod threaded;

pub use delay_queue::{DQ_MIN_ITEMS, dq_runs_for, run_delay_queue};
pub use durable::{DurableParams, run_durable};
pub use flows::{FlowsParams, run_flows};
pub use http::{HttpFigures, HttpParams, run_http};
pub use layouts::run_layouts;
pub use memory::{FULL_CHURN_MEMORY_STEPS, QUICK_CHURN_MEMORY_STEPS, run_memory};
pub use schedules::{SchedulesParams, run_schedules};
pub use server::{ServerFigures, ServerParams, run_server};
pub use single::{Cell, Workload, run_single};
pub use threaded::run_threaded;

use crate::chart::Panel;
use crate::peers::Peer;
use crate::report::Table;
use crate::workloads::Check;
use crate::workloads::threaded::{IdleParams, LatenessParams};
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
    /// `DelayQueue` insert+take and insert+remove.
    pub delay_queue: bool,
    /// Durable timers against the one-second Redis wheel.
    pub durable: bool,
    /// HTTP callbacks of the durable timers against the one-second Redis
    /// wheel's thread per callback.
    pub http: bool,
    /// Flow control's cost per callback on Redis, and dead letters
    /// replayed in bulk.
    pub flows: bool,
    /// The `wheel-server` binary: adds over HTTP, idle, callbacks from
    /// two servers.
    pub server: bool,
    /// Durable recurring schedules (Redis, embedded) beside the in-memory
    /// `schedule_repeating`.
    pub schedules: bool,
}

impl Sections {
    /// Everything.
    pub const ALL: Sections = Sections {
        single: true,
        memory: true,
        threaded: true,
        delay_queue: true,
        durable: true,
        http: true,
        flows: true,
        server: true,
        schedules: true,
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
    /// Timers for the memory figures.
    pub memory_n: usize,
    /// Churn steps before the memory figures after a long churn.
    pub churn_memory_steps: usize,
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
    /// The durable section.
    pub durable: DurableParams,
    /// The HTTP section.
    pub http: HttpParams,
    /// The flows section.
    pub flows: FlowsParams,
    /// The server section.
    pub server: ServerParams,
    /// The schedules section.
    pub schedules: SchedulesParams,
    /// What to run.
    pub sections: Sections,
}

const GIB: f64 = (1u64 << 30) as f64;

impl Settings {
    /// The README's command: small sizes, about four minutes on 2 cores
    /// (the durable section takes most of it).
    pub fn quick() -> Settings {
        Settings {
            quick: true,
            sizes: vec![10_000, 100_000],
            runs: 3,
            runs_large: 3,
            churn_steps: 200_000,
            memory_n: 1_000_000,
            churn_memory_steps: QUICK_CHURN_MEMORY_STEPS,
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
            durable: DurableParams::quick(),
            http: HttpParams::quick(),
            flows: FlowsParams::quick(),
            server: ServerParams::quick(),
            schedules: SchedulesParams::quick(),
            sections: Sections::ALL,
        }
    }

    /// The full run: N = 1K to 10M (10K, 1M and 10M are the headline sizes;
    /// 1K and 100K fill in the chart).
    pub fn full() -> Settings {
        Settings {
            quick: false,
            sizes: vec![1_000, 10_000, 100_000, 1_000_000, 10_000_000],
            runs: 5,
            runs_large: 3,
            churn_steps: 2_000_000,
            memory_n: 1_000_000,
            churn_memory_steps: FULL_CHURN_MEMORY_STEPS,
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
            durable: DurableParams::full(),
            http: HttpParams::full(),
            flows: FlowsParams::full(),
            server: ServerParams::full(),
            schedules: SchedulesParams::full(),
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
    /// The durable section's chart: the index of the table it goes above,
    /// and its panels.
    pub durable_chart: Option<(usize, Vec<Panel>)>,
    /// The HTTP section's figures for the targets, if it ran (it runs
    /// before the durable section, whose targets table shows them).
    pub http: Option<HttpFigures>,
}

/// "10K", "1M" for titles; a count that is no whole number of thousands
/// is written out.
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
}
