//! A small log-linear histogram of lateness, for [`DurableStats`](super::DurableStats).
//!
//! Values are microseconds. A value's bucket is its highest set bit and the
//! [`SUB_BITS`] bits below it, so every bucket spans at most 1/16 of its
//! values: a percentile read back is at most about 6 % above the true one,
//! never below it (buckets report their upper edge).
//!
//! Cumulative counts at fixed bounds, for Prometheus, count a bucket under
//! a bound when the bucket's lowest value is at or below the bound: a
//! count never misses a value at or below its bound, and may include
//! values up to 1/16 above it (those sharing the bound's bucket).
//!
//! Node state: none of its own: the node's histogram lives in its runs stage
//! (`node/runs.rs`), which records into it; the stats read a copy.

use std::time::Duration;

/// Bits of a value kept below its highest set bit.
const SUB_BITS: u32 = 4;
const SUBS: usize = 1 << SUB_BITS;
const BUCKETS: usize = (64 - SUB_BITS as usize + 1) * SUBS;

/// Counts of lateness values by bucket.
#[derive(Debug, Clone)]
pub(crate) struct Histogram {
    counts: Vec<u64>,
    total: u64,
    max: u64,
    /// The sum of the values, saturating.
    sum: u64,
}

/// The bucket of `v`: values below `SUBS` have one each; above, the
/// exponent picks a group of `SUBS` buckets and the next bits the bucket.
fn bucket_of(v: u64) -> usize {
    if v < SUBS as u64 {
        return v as usize;
    }
    let exp = 63 - v.leading_zeros(); // >= SUB_BITS
    let sub = (v >> (exp - SUB_BITS)) as usize & (SUBS - 1);
    (exp - SUB_BITS + 1) as usize * SUBS + sub
}

/// The smallest value in bucket `b`.
fn lower_of(b: usize) -> u64 {
    if b < SUBS {
        return b as u64;
    }
    let exp = (b / SUBS) as u32 + SUB_BITS - 1;
    (1u64 << exp) | (((b % SUBS) as u64) << (exp - SUB_BITS))
}

/// The largest value in bucket `b`.
fn upper_of(b: usize) -> u64 {
    if b < SUBS {
        return b as u64;
    }
    let exp = (b / SUBS) as u32 + SUB_BITS - 1;
    let sub = (b % SUBS) as u64;
    let low = (1u64 << exp) | (sub << (exp - SUB_BITS));
    low.saturating_add((1u64 << (exp - SUB_BITS)) - 1)
}

impl Histogram {
    pub(crate) fn new() -> Histogram {
        Histogram {
            counts: vec![0; BUCKETS],
            total: 0,
            max: 0,
            sum: 0,
        }
    }

    pub(crate) fn record(&mut self, d: Duration) {
        let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        self.counts[bucket_of(us)] += 1;
        self.total += 1;
        self.max = self.max.max(us);
        self.sum = self.sum.saturating_add(us);
    }

    /// The smallest bucket edge at or above a share `q` (0..=1) of the
    /// values; zero when nothing was recorded.
    pub(crate) fn quantile(&self, q: f64) -> Duration {
        if self.total == 0 {
            return Duration::ZERO;
        }
        let rank = ((self.total as f64 * q).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for (b, &n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Duration::from_micros(upper_of(b).min(self.max));
            }
        }
        Duration::from_micros(self.max)
    }

    pub(crate) fn max(&self) -> Duration {
        Duration::from_micros(self.max)
    }

    /// How many values were recorded, and their sum.
    pub(crate) fn count_and_sum(&self) -> (u64, Duration) {
        (self.total, Duration::from_micros(self.sum))
    }

    /// For each of `bounds` (ascending), the values at or below it, as
    /// the module's docs say: never fewer, at most those within 1/16
    /// above it more.
    pub(crate) fn cumulative<const N: usize>(&self, bounds: [Duration; N]) -> [u64; N] {
        let mut out = [0; N];
        let mut seen = 0;
        let mut b = 0;
        for (i, bound) in bounds.into_iter().enumerate() {
            let bound = u64::try_from(bound.as_micros()).unwrap_or(u64::MAX);
            while b < BUCKETS && lower_of(b) <= bound {
                seen += self.counts[b];
                b += 1;
            }
            out[i] = seen;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_value_in_order() {
        let edges = [
            0,
            1,
            15,
            16,
            17,
            31,
            32,
            33,
            1000,
            1 << 40,
            u64::MAX - 1,
            u64::MAX,
        ];
        for v in edges {
            let b = bucket_of(v);
            assert!(b < BUCKETS, "{v}");
            assert!(upper_of(b) >= v, "{v} above its bucket's edge");
            if b > 0 {
                assert!(upper_of(b - 1) < v, "{v} belongs to an earlier bucket");
            }
        }
        for b in 1..BUCKETS {
            assert!(upper_of(b) > upper_of(b - 1));
        }
        assert_eq!(upper_of(BUCKETS - 1), u64::MAX);
        for b in 1..BUCKETS {
            assert_eq!(
                lower_of(b),
                upper_of(b - 1) + 1,
                "bucket {b} starts after the last"
            );
            assert_eq!(bucket_of(lower_of(b)), b);
        }
        assert_eq!(lower_of(0), 0);
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn cumulative_counts_are_exact_at_the_small_bounds_for_whole_milliseconds() {
        let bounds = [ms(1), ms(2), ms(5), ms(10), ms(25)];
        let mut h = Histogram::new();
        assert_eq!(h.cumulative(bounds), [0; 5]);
        // Each bound, the millisecond before it and the one after it.
        for b in [0, 1, 2, 3, 4, 5, 6, 9, 10, 11, 24, 25, 26] {
            h.record(ms(b));
        }
        assert_eq!(h.cumulative(bounds), [2, 3, 6, 9, 12]);
        let (count, sum) = h.count_and_sum();
        assert_eq!(count, 13);
        assert_eq!(sum, ms(126));
    }

    #[test]
    fn cumulative_counts_never_miss_and_overshoot_by_at_most_a_sixteenth() {
        let mut h = Histogram::new();
        let bound = ms(10_000);
        let values = [9_000, 9_999, 10_000, 10_001, 10_300, 10_625, 10_700, 20_000];
        for v in values {
            h.record(ms(v));
        }
        let [under] = h.cumulative([bound]);
        let exact = values.iter().filter(|&&v| v <= 10_000).count() as u64;
        let loose = values.iter().filter(|&&v| v * 16 <= 10_000 * 17).count() as u64;
        assert!(
            (exact..=loose).contains(&under),
            "{under} not in {exact}..={loose}"
        );
        assert_eq!(h.cumulative([Duration::MAX]), [values.len() as u64]);
        assert_eq!(h.cumulative([Duration::ZERO]), [0]);
    }

    #[test]
    fn quantiles_are_close_and_never_low() {
        let mut h = Histogram::new();
        assert_eq!(h.quantile(0.5), Duration::ZERO);
        for us in 1..=1000 {
            h.record(Duration::from_micros(us));
        }
        let p50 = h.quantile(0.5).as_micros();
        let p99 = h.quantile(0.99).as_micros();
        assert!((500..=532).contains(&p50), "{p50}");
        assert!((990..=1000).contains(&p99), "{p99}");
        assert_eq!(h.max(), Duration::from_micros(1000));
        assert_eq!(h.quantile(1.0), Duration::from_micros(1000));
    }
}
