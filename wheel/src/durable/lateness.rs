//! A small log-linear histogram of lateness, for [`DurableStats`](super::DurableStats).
//!
//! Values are microseconds. A value's bucket is its highest set bit and the
//! [`SUB_BITS`] bits below it, so every bucket spans at most 1/16 of its
//! values: a percentile read back is at most about 6 % above the true one,
//! never below it (buckets report their upper edge).

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
        }
    }

    pub(crate) fn record(&mut self, d: Duration) {
        let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        self.counts[bucket_of(us)] += 1;
        self.total += 1;
        self.max = self.max.max(us);
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
