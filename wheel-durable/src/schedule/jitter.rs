//! Jitter: a run's due time, its nominal time plus a delay in
//! `[0, jitter)` that is a pure function of the schedule id and the
//! nominal time.
//!
//! Deterministic so that every node that creates (or re-creates) a run
//! gives it the same due time; bounded below the gap to the next nominal
//! time, so jittered runs keep their order. The delay only ever adds:
//! a run is never due before its nominal time.
//!
//! Node state: none (pure functions).

use std::time::SystemTime;

use super::Schedule;
use super::instant::{Ms, floor_ms, max_ms, system_time};

impl Schedule {
    /// The due time of schedule `id`'s run at `nominal`: `nominal` plus
    /// the jitter's share for this run, less than the jitter and less than
    /// the gap to the spec's next nominal time.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use wheel_durable::schedule::{Schedule, Spec};
    ///
    /// let s = Schedule::builder(Spec::every(Duration::from_secs(60))?)
    ///     .jitter(Duration::from_secs(10))
    ///     .build()?;
    /// let nominal = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    /// let due = s.due_of("reports", nominal);
    /// assert!(due >= nominal && due < nominal + Duration::from_secs(10));
    /// assert_eq!(due, s.due_of("reports", nominal)); // the same on every node
    /// # Ok::<(), wheel_durable::schedule::SpecError>(())
    /// ```
    pub fn due_of(&self, id: &str, nominal: SystemTime) -> SystemTime {
        let nominal = floor_ms(nominal).clamp(0, max_ms());
        let jitter = Ms::try_from(self.jitter().as_millis()).unwrap_or(Ms::MAX);
        let gap = self
            .spec()
            .next_ms(nominal)
            .map_or(Ms::MAX, |n| n - nominal);
        let span = jitter.min(gap);
        if span <= 1 {
            return system_time(nominal);
        }
        let delay = (mix(id, nominal) % span as u64) as Ms;
        system_time((nominal + delay).min(max_ms()))
    }
}

/// A stable 64-bit hash of `id` and `nominal` (FNV-1a, then a splitmix64
/// finish to spread its low bits). Not `std`'s or `ahash`'s hashers: their
/// output may change between releases, and due times must not.
fn mix(id: &str, nominal: Ms) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes().chain(nominal.to_le_bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;
    use crate::schedule::Spec;

    fn with_jitter(period_s: u64, jitter: Duration) -> Schedule {
        let spec = Spec::every(Duration::from_secs(period_s)).unwrap();
        Schedule::builder(spec).jitter(jitter).build().unwrap()
    }

    #[test]
    fn no_jitter_is_no_delay() {
        let s = with_jitter(60, Duration::ZERO);
        let t = UNIX_EPOCH + Duration::from_secs(600);
        assert_eq!(s.due_of("a", t), t);
        let s = with_jitter(60, Duration::from_millis(1));
        assert_eq!(s.due_of("a", t), t);
    }

    #[test]
    fn delays_stay_within_the_jitter_and_spread_over_it() {
        let jitter = Duration::from_secs(30);
        let s = with_jitter(60, jitter);
        let mut delays = Vec::new();
        for i in 0..2_000u64 {
            let nominal = UNIX_EPOCH + Duration::from_secs(60 * i);
            let delay = s
                .due_of("sched-a", nominal)
                .duration_since(nominal)
                .unwrap();
            assert!(delay < jitter);
            delays.push(delay);
        }
        // Both halves of the span are used: the hash is not stuck.
        let low = delays.iter().filter(|d| **d < jitter / 2).count();
        assert!((600..1_400).contains(&low), "{low}");
        // Other ids get other delays for the same nominal time.
        let t = UNIX_EPOCH + Duration::from_secs(600);
        let distinct: std::collections::HashSet<_> =
            (0..50).map(|i| s.due_of(&format!("s{i}"), t)).collect();
        assert!(distinct.len() > 40, "{}", distinct.len());
    }

    #[test]
    fn the_hash_is_stable() {
        // Pinned: a due time computed by one build must match another's.
        assert_eq!(mix("", 0), 0x813f_0174_a236_7c13);
        assert_eq!(
            mix("reports", 1_800_000_000_000),
            mix("reports", 1_800_000_000_000)
        );
        assert_ne!(mix("reports", 0), mix("reports", 1));
    }

    #[test]
    fn nominal_times_at_the_range_end_stay_in_it() {
        let s = with_jitter(60, Duration::from_secs(59));
        let far = UNIX_EPOCH + Duration::from_millis(u64::MAX / 2);
        assert!(floor_ms(s.due_of("a", far)) <= max_ms());
    }
}
