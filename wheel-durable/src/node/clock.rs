//! Store time on this node's monotonic clock.
//!
//! Every store reply that carries the store's clock (`claim` and `start`
//! answer with the `now` they read) gives a reading: store time `now` had
//! come by the instant the reply was received. A timer due at store time
//! `d` is therefore due by `received + (d - now)`, never earlier, and that
//! is when the node schedules it. The shorter the call, the closer that
//! bound: a claim of hundreds of timers spends milliseconds between
//! reading the clock and its reply, a start of a few timers a fraction of
//! one. So the node keeps the tightest reading of the last few seconds
//! ([`WINDOW`]) rather than the last one; older readings age out, so a
//! store clock that is stepped (or a Redis failover to another machine)
//! is followed within two windows. A reading too tight (clocks drifting
//! apart) costs a `start` answered "not yet" and a second one, never an
//! early run: the store checks the due time itself.
//!
//! Owns the store-time readings ([`StoreTime`]): the claimer and the starter
//! record a reading after each store call that carries one; the claimer reads
//! them to plan.

use std::time::{Duration, Instant};

use crate::store::Millis;
use crate::sync::{Mutex, lock};

/// How long one reading is kept (between one and two windows).
const WINDOW: Duration = Duration::from_secs(2);

/// One reading: store time `now` had come by the instant `received`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Reading {
    pub(super) now: Millis,
    pub(super) received: Instant,
}

impl Reading {
    /// The instant by which store time `at` has come.
    pub(super) fn instant(&self, at: Millis) -> Instant {
        if at >= self.now {
            self.received + Duration::from_millis(at - self.now)
        } else {
            let ago = Duration::from_millis(self.now - at);
            self.received.checked_sub(ago).unwrap_or(self.received)
        }
    }

    /// Whether this reading puts every store time earlier than `other`
    /// does (compared by adding only, so that no instant underflows).
    fn tighter(&self, other: &Reading) -> bool {
        if other.now >= self.now {
            self.received + Duration::from_millis(other.now - self.now) < other.received
        } else {
            self.received < other.received + Duration::from_millis(self.now - other.now)
        }
    }
}

/// The node's view of the store's clock: the tightest recent reading.
///
/// Owns the readings. Who touches what: the claimer and the starter take
/// in the reading of each store reply that carries one
/// ([`StoreTime::observe`]); the claimer reads the best one to plan by
/// ([`StoreTime::best`]).
#[derive(Debug, Default)]
pub(super) struct StoreTime {
    readings: Mutex<Readings>,
}

impl StoreTime {
    /// Takes in a store reply's clock reading (store time `now` had come by
    /// `received`); the reading to schedule by.
    pub(super) fn observe(&self, now: Millis, received: Instant) -> Reading {
        let r = Reading { now, received };
        let mut readings = lock(&self.readings);
        readings.observe(r);
        readings.best().unwrap_or(r)
    }

    /// The reading to schedule by, if any.
    pub(super) fn best(&self) -> Option<Reading> {
        lock(&self.readings).best()
    }
}

/// The tightest reading of the current and the previous window.
#[derive(Debug, Default)]
struct Readings {
    current: Option<Reading>,
    previous: Option<Reading>,
    window_start: Option<Instant>,
}

fn tightest(a: Option<Reading>, b: Option<Reading>) -> Option<Reading> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b.tighter(&a) { b } else { a }),
        (a, b) => a.or(b),
    }
}

impl Readings {
    /// Takes in a reading.
    fn observe(&mut self, r: Reading) {
        let start = *self.window_start.get_or_insert(r.received);
        if r.received.saturating_duration_since(start) >= WINDOW {
            self.previous = self.current.take();
            self.window_start = Some(r.received);
        }
        self.current = tightest(self.current, Some(r));
    }

    /// The reading to schedule by, if any.
    fn best(&self) -> Option<Reading> {
        tightest(self.current, self.previous)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn store_time_maps_onto_the_reading_s_instant() {
        let received = Instant::now() + Duration::from_secs(10);
        let r = Reading {
            now: 1_000,
            received,
        };
        assert_eq!(r.instant(1_000), received);
        assert_eq!(r.instant(1_250), received + ms(250));
        assert_eq!(r.instant(400), received - ms(600));
        assert_eq!(r.instant(0), received - ms(1_000));
    }

    #[test]
    fn the_tightest_reading_wins_until_it_ages_out() {
        let t0 = Instant::now();
        let mut st = Readings::default();
        assert_eq!(st.best(), None);
        // A slow call: store time 1 000 came 5 ms before it was received.
        let slow = Reading {
            now: 1_000,
            received: t0 + ms(5),
        };
        // A quick one 100 ms later: only 1 ms between reading and reply.
        let quick = Reading {
            now: 1_104,
            received: t0 + ms(105),
        };
        st.observe(slow);
        st.observe(quick);
        assert_eq!(st.best(), Some(quick));
        assert_eq!(st.best().unwrap().instant(2_000), t0 + ms(1_001));
        // A looser reading later does not replace it within the window...
        let loose = Reading {
            now: 1_500,
            received: t0 + ms(510),
        };
        st.observe(loose);
        assert_eq!(st.best(), Some(quick));
        // ... and it ages out after two windows, so a stepped clock is
        // followed.
        let stepped = Reading {
            now: 900_000,
            received: t0 + WINDOW * 2 + ms(200),
        };
        st.observe(Reading {
            now: 2_600,
            received: t0 + WINDOW + ms(100),
        });
        st.observe(stepped);
        st.observe(Reading {
            now: 901_000,
            received: t0 + WINDOW * 3 + ms(300),
        });
        assert_eq!(
            st.best().unwrap().instant(901_000),
            t0 + WINDOW * 2 + ms(1_200)
        );
    }
}
