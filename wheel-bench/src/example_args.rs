//! The positional arguments of the churn examples (`examples/churn_bound.rs`,
//! `examples/churn_pad.rs`, `examples/churn_interleaved.rs`): `SIZES`
//! (comma-separated pending-timer counts) and `ROUNDS`, which they share, and
//! the counts that follow them (`examples/churn_memory.rs` reads a second
//! list, `STEPS`, where the others read `ROUNDS`; `examples/churn_mix.rs` a
//! single count there), and `CLOCK`
//! (`examples/churn_interleaved.rs`, and `examples/churn_bound.rs` after
//! `ONLY`).

/// Pending-timer counts the churn examples use when `SIZES` is not given.
pub const DEFAULT_SIZES: [usize; 2] = [1_000_000, 10_000_000];

/// Reads `SIZES` from `args[0]` (default [`DEFAULT_SIZES`]) and `ROUNDS`
/// from `args[1]` (default `default_rounds`).
///
/// # Panics
///
/// On an argument that does not parse, with a message naming it: these are
/// command-line tools, and a typo should stop them before a long run.
///
/// # Examples
///
/// ```
/// let args = vec!["1000,2000".to_string()];
/// let (sizes, rounds) = wheel_bench::example_args::sizes_and_rounds(&args, 3);
/// assert_eq!(sizes, vec![1000, 2000]);
/// assert_eq!(rounds, 3);
/// ```
pub fn sizes_and_rounds(args: &[String], default_rounds: usize) -> (Vec<usize>, usize) {
    let sizes = counts(args, 0, &DEFAULT_SIZES, "SIZES");
    let rounds = args
        .get(1)
        .map_or(default_rounds, |s| s.parse().expect("ROUNDS: a number"));
    (sizes, rounds)
}

/// Reads the count at `args[at]`, or `default` if there are fewer
/// arguments; `name` names the argument in the panic message.
///
/// # Panics
///
/// If the argument is not a number, as [`sizes_and_rounds`].
///
/// # Examples
///
/// ```
/// use wheel_bench::example_args::count;
/// let args = vec!["1000".to_string(), "3".to_string(), "500".to_string()];
/// assert_eq!(count(&args, 2, 8, "STEPS"), 500);
/// assert_eq!(count(&args, 3, 8, "PARTS"), 8);
/// ```
pub fn count(args: &[String], at: usize, default: usize, name: &str) -> usize {
    args.get(at).map_or(default, |s| {
        s.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}: a number (got {s:?})"))
    })
}

/// Reads the comma-separated counts at `args[at]`, or `default` if there
/// are fewer arguments; `name` names the argument in the panic message.
///
/// # Panics
///
/// If a count is not a number, as [`sizes_and_rounds`].
///
/// # Examples
///
/// ```
/// use wheel_bench::example_args::counts;
/// let args = vec!["1000".to_string(), "5, 10".to_string()];
/// assert_eq!(counts(&args, 1, &[2], "STEPS"), vec![5, 10]);
/// assert_eq!(counts(&args, 2, &[2], "STEPS"), vec![2]);
/// ```
pub fn counts(args: &[String], at: usize, default: &[usize], name: &str) -> Vec<usize> {
    match args.get(at) {
        Some(list) => list
            .split(',')
            .map(|s| {
                s.trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("{name}: comma-separated counts (got {list:?})"))
            })
            .collect(),
        None => default.to_vec(),
    }
}

/// Reads `CLOCK` from `args[at]`: `moving` (the default, when there are
/// fewer arguments) or `frozen`; returns `true` for `frozen`, where the
/// example wraps its queues in [`Frozen`](crate::peers::frozen::Frozen).
///
/// # Panics
///
/// On any other word, with a message naming `CLOCK`.
///
/// # Examples
///
/// ```
/// use wheel_bench::example_args::frozen_clock;
///
/// let args = vec!["1000".to_string(), "frozen".to_string()];
/// assert!(frozen_clock(&args, 1));
/// assert!(!frozen_clock(&args, 2));
/// ```
pub fn frozen_clock(args: &[String], at: usize) -> bool {
    match args.get(at).map(String::as_str) {
        None | Some("moving") => false,
        Some("frozen") => true,
        Some(other) => panic!("CLOCK: `moving` or `frozen`, not {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_given_values() {
        assert_eq!(sizes_and_rounds(&[], 2), (DEFAULT_SIZES.to_vec(), 2));
        let args = ["7, 8".to_string(), "5".to_string()];
        assert_eq!(sizes_and_rounds(&args, 2), (vec![7, 8], 5));
    }

    #[test]
    #[should_panic(expected = "PART: a number")]
    fn a_bad_count_names_its_argument() {
        count(
            &["1".to_string(), "2".to_string(), "x".to_string()],
            2,
            5,
            "PART",
        );
    }

    #[test]
    #[should_panic(expected = "STEPS: comma-separated counts")]
    fn a_bad_list_names_its_argument() {
        counts(&["1".to_string(), "5,x".to_string()], 1, &[2], "STEPS");
    }

    #[test]
    fn the_clock_is_moving_unless_frozen() {
        let args = ["1".to_string(), "moving".to_string(), "frozen".to_string()];
        assert!(!frozen_clock(&args, 1));
        assert!(frozen_clock(&args, 2));
        assert!(!frozen_clock(&args, 3));
    }

    #[test]
    #[should_panic(expected = "CLOCK: `moving` or `frozen`")]
    fn a_bad_clock_stops_the_tool() {
        frozen_clock(&["icy".to_string()], 0);
    }

    #[test]
    #[should_panic(expected = "ROUNDS")]
    fn a_bad_round_count_stops_the_tool() {
        sizes_and_rounds(&["1".to_string(), "x".to_string()], 2);
    }
}
