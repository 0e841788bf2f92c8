//! Helpers shared by the durable test binaries: a recorder of handler
//! runs, the testkit's bounded wait, and the path of the `durable_node`
//! binary used as a child process.
#![allow(dead_code)] // each test binary uses a different subset

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Instant, SystemTime};

use wheel_durable::{Fired, Outcome};

pub use wheel_testkit::{LIVENESS, eventually};

/// Held by the tests that each keep many processes busy (three node
/// processes, or a Redis Cluster with its nodes), so that they run one at
/// a time and each keeps the timing its assertions allow for.
static HEAVY: Mutex<()> = Mutex::new(());

/// Takes [`HEAVY`], whatever an earlier holder's panic left.
pub fn heavy() -> std::sync::MutexGuard<'static, ()> {
    HEAVY.lock().unwrap_or_else(|e| e.into_inner())
}

/// One handler run as seen by the handler.
#[derive(Debug, Clone)]
pub struct Run {
    pub key: String,
    pub due: SystemTime,
    pub fence: u64,
    pub attempt: u32,
    pub payload: Vec<u8>,
    /// The machine's clock when the handler started.
    pub at: SystemTime,
    /// Which node ran it.
    pub node: usize,
}

/// Collects handler runs from any number of nodes.
#[derive(Default, Clone)]
pub struct Recorder {
    inner: Arc<(Mutex<Vec<Run>>, Condvar)>,
}

impl Recorder {
    pub fn new() -> Recorder {
        Recorder::default()
    }

    /// A handler for node `node` that records each run and answers with
    /// `outcome(run)`.
    pub fn handler(
        &self,
        node: usize,
        outcome: impl Fn(&Fired) -> Outcome + Send + Sync + 'static,
    ) -> impl Fn(&Fired) -> Outcome + Send + Sync + 'static {
        let me = self.clone();
        move |f: &Fired| {
            let at = SystemTime::now();
            me.push(Run {
                key: f.key.clone(),
                due: f.due,
                fence: f.fence,
                attempt: f.attempt,
                payload: f.payload.clone(),
                at,
                node,
            });
            outcome(f)
        }
    }

    pub fn push(&self, run: Run) {
        let (runs, cond) = &*self.inner;
        runs.lock().unwrap().push(run);
        cond.notify_all();
    }

    pub fn runs(&self) -> Vec<Run> {
        self.inner.0.lock().unwrap().clone()
    }

    /// Waits until at least `n` runs are recorded; panics after LIVENESS.
    pub fn wait_for(&self, n: usize) -> Vec<Run> {
        let (runs, cond) = &*self.inner;
        let until = Instant::now() + LIVENESS;
        let mut guard = runs.lock().unwrap();
        while guard.len() < n {
            let now = Instant::now();
            assert!(
                now < until,
                "only {} of {n} runs after {LIVENESS:?}",
                guard.len()
            );
            guard = cond.wait_timeout(guard, until - now).unwrap().0;
        }
        guard.clone()
    }

    /// Runs by key.
    pub fn by_key(&self) -> HashMap<String, Vec<Run>> {
        let mut m: HashMap<String, Vec<Run>> = HashMap::new();
        for r in self.runs() {
            m.entry(r.key.clone()).or_default().push(r);
        }
        m
    }
}

/// Asserts that no run started before its due time by the machine's clock
/// (the store's clock, for the embedded store and a local Redis).
pub fn assert_none_early(runs: &[Run]) {
    for r in runs {
        assert!(
            r.at >= r.due,
            "{} started {:?} early",
            r.key,
            r.due.duration_since(r.at).unwrap()
        );
    }
}

/// The `durable_node` binary, which cargo builds before the tests that
/// need it (they require its features).
pub fn node_binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_durable_node"))
}
