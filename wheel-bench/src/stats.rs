//! Medians and percentiles.

/// The median of `values` (mean of the middle two for an even count); NaN if empty.
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// The `p`-th percentile (0..=100) of already sorted values, nearest-rank method.
pub fn percentile_sorted(sorted: &[i64], p: f64) -> Option<i64> {
    if sorted.is_empty() {
        return None;
    }
    // The small epsilon keeps float error (99.9% of 1000 = 999.000...1) from
    // pushing the rank one up.
    let rank = ((p / 100.0) * sorted.len() as f64 - 1e-9).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_odd_even_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn percentiles_nearest_rank() {
        let v: Vec<i64> = (1..=1000).collect();
        assert_eq!(percentile_sorted(&v, 50.0), Some(500));
        assert_eq!(percentile_sorted(&v, 99.0), Some(990));
        assert_eq!(percentile_sorted(&v, 99.9), Some(999));
        assert_eq!(percentile_sorted(&v, 100.0), Some(1000));
        assert_eq!(percentile_sorted(&v, 0.0), Some(1));
        assert_eq!(percentile_sorted(&[], 50.0), None);
    }
}
