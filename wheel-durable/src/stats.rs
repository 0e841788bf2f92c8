//! The store's counts for [`stats`](super::DurableTimers::stats), read off
//! the caller's thread; and [`HttpCounters`], the node's counts of HTTP
//! callback attempts.
//!
//! `stats` feeds metrics endpoints that poll it every few seconds, so it
//! must answer quickly even while the store is down (a Redis store keeps
//! retrying a call for `unavailable_after`, seconds by default). A reader
//! thread, started by the first `stats` call, makes the store calls; a
//! caller asks for a read and waits for it at most [`STATS_WAIT`], and not
//! at all while the store is known to be unreachable. Either way it gets
//! the last counts read, with their age.
//!
//! Who touches what: callers bump `asked` and wait on `cond`; only the
//! reader thread sets `done`, `last` and `last_ok`, and it notifies `cond`
//! after each read. `done` only grows, so a caller whose ask number is at
//! most `done` knows a read that began after its ask has finished.
//!
//! Node state: none of the stages'. It owns the last counts read from the
//! store and the reader's schedule; `DurableTimers::stats` reads them, and
//! reads the node's holdings, runs and counters only through their own
//! methods.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use super::HttpCounts;
use super::store::{Counts, Store};
use super::time::wait_until;
use crate::sync::lock;

/// The longest `stats` waits for a fresh read of a reachable store.
pub(crate) const STATS_WAIT: Duration = Duration::from_millis(25);

/// A node's HTTP callback attempts by result, bumped by the sender with
/// relaxed atomics (each count is independent; `stats` reads each on its
/// own) and read into [`HttpCounts`]. A node without HTTP keeps all zero.
#[derive(Default)]
pub(crate) struct HttpCounters {
    by_class: [AtomicU64; 5],
    pub(crate) timeout: AtomicU64,
    pub(crate) connection_error: AtomicU64,
    pub(crate) refused_target: AtomicU64,
}

impl HttpCounters {
    /// Counts a reply with `status`.
    #[cfg(feature = "http")]
    pub(crate) fn status(&self, status: u16) {
        let class = match status {
            200..=599 => usize::from(status / 100 - 2),
            _ => 4,
        };
        self.by_class[class].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> HttpCounts {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let [s2, s3, s4, s5, other] = &self.by_class;
        HttpCounts {
            status_2xx: get(s2),
            status_3xx: get(s3),
            status_4xx: get(s4),
            status_5xx: get(s5),
            other_status: get(other),
            timeout: get(&self.timeout),
            connection_error: get(&self.connection_error),
            refused_target: get(&self.refused_target),
        }
    }
}

/// What the reader has read, for one `stats` call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Snapshot {
    /// The last counts read, and when.
    pub(crate) counts: Option<(Counts, Instant)>,
    /// The last read succeeded and the store has not failed a call since.
    pub(crate) available: bool,
}

/// The reader's shared state.
#[derive(Default)]
struct State {
    /// Reads asked for so far.
    asked: u64,
    /// The `asked` value of the last read finished: every ask up to it
    /// has seen a read that began after it.
    done: u64,
    /// The last counts read successfully, and when the read finished.
    last: Option<(Counts, Instant)>,
    /// Whether the last read succeeded.
    last_ok: bool,
    /// Whether the reader thread runs (started by the first ask).
    started: bool,
    /// Set at shutdown: the reader exits at its next turn.
    stop: bool,
}

/// Reads the store's counts on its own thread, on request.
pub(crate) struct CountsReader {
    store: Arc<dyn Store>,
    state: Mutex<State>,
    cond: Condvar,
}

impl CountsReader {
    pub(crate) fn new(store: Arc<dyn Store>) -> Arc<CountsReader> {
        Arc::new(CountsReader {
            store,
            state: Mutex::new(State::default()),
            cond: Condvar::new(),
        })
    }

    /// Asks for a read and waits for it at most `wait` (not at all while
    /// the store is unreachable); answers with what has been read by then.
    pub(crate) fn snapshot(self: &Arc<Self>, wait: Duration) -> Snapshot {
        let wait = if self.store.reachable() {
            wait
        } else {
            Duration::ZERO
        };
        let deadline = Instant::now() + wait;
        let mut st = lock(&self.state);
        if !st.stop {
            if !st.started {
                st.started = self.spawn();
            }
            st.asked += 1;
            let want = st.asked;
            self.cond.notify_all();
            while st.started && st.done < want {
                let (guard, late) = wait_until(&self.cond, st, deadline);
                st = guard;
                if late {
                    break;
                }
            }
        }
        Snapshot {
            counts: st.last,
            available: st.last_ok && self.store.reachable(),
        }
    }

    /// Stops the reader at its next turn. A read in progress is left to
    /// end on its own (the closed store fails it): waiting for it would
    /// make shutdown wait for an unreachable store.
    pub(crate) fn stop(&self) {
        lock(&self.state).stop = true;
        self.cond.notify_all();
    }

    /// Starts the reader thread; false if the system would not.
    fn spawn(self: &Arc<Self>) -> bool {
        let me = Arc::downgrade(self);
        std::thread::Builder::new()
            .name("wheel-durable-stats".into())
            .spawn(move || read_loop(&me))
            .is_ok()
    }
}

/// The reader thread: one read per turn while reads are asked for. It
/// holds the reader only weakly between turns, so a dropped handle ends
/// it.
fn read_loop(me: &Weak<CountsReader>) {
    loop {
        let Some(reader) = me.upgrade() else { return };
        let target = {
            let mut st = lock(&reader.state);
            while !st.stop && st.done == st.asked {
                st = wait_until(&reader.cond, st, Instant::now() + Duration::from_secs(1)).0;
                if Arc::strong_count(&reader) == 1 {
                    return; // only this thread is left
                }
            }
            if st.stop {
                return;
            }
            st.asked
        };
        let read = reader.store.counts();
        let mut st = lock(&reader.state);
        st.last_ok = read.is_ok();
        if let Ok(counts) = read {
            st.last = Some((counts, Instant::now()));
        }
        st.done = target;
        reader.cond.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(feature = "http")]
    fn statuses_are_counted_by_class_at_the_edges() {
        let c = HttpCounters::default();
        for s in [100, 199, 200, 299, 300, 399, 400, 499, 500, 599, 600, 999] {
            c.status(s);
        }
        c.timeout.fetch_add(1, Ordering::Relaxed);
        let got = c.snapshot();
        assert_eq!(
            (
                got.status_2xx,
                got.status_3xx,
                got.status_4xx,
                got.status_5xx
            ),
            (2, 2, 2, 2)
        );
        assert_eq!(got.other_status, 4);
        assert_eq!(
            (got.timeout, got.connection_error, got.refused_target),
            (1, 0, 0)
        );
    }
    use crate::AddMode;
    use crate::store::model::Model;
    use crate::store::{Due, NewTimer, StoreClock};

    #[test]
    fn a_read_asked_for_sees_every_write_made_before_the_ask() {
        let store = Arc::new(Model::new(StoreClock::Real));
        let reader = CountsReader::new(store.clone());
        for n in 1..=3u64 {
            let key = format!("k{n}");
            let timer = NewTimer {
                key: &key,
                due: Due::After(60_000),
                payload: b"",
            };
            store.add(&[timer], AddMode::Replace).unwrap();
            // A long wait: the read is fast, and the test checks freshness.
            let s = reader.snapshot(Duration::from_secs(30));
            assert!(s.available);
            assert_eq!(s.counts.map(|(c, _)| c.pending), Some(n));
        }
        reader.stop();
        let s = reader.snapshot(Duration::from_secs(30));
        assert_eq!(
            s.counts.map(|(c, _)| c.pending),
            Some(3),
            "after stop, the last counts"
        );
    }
}
