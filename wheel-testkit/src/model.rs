//! One way to run a concurrency model, shared by the loom model files of
//! every crate.
//!
//! Under `RUSTFLAGS="--cfg loom"` (which reaches this crate too) a model
//! runs in every interleaving loom explores up to a preemption bound, on
//! loom's threads and primitives; without it, [`STD_RUNS`] times on std's,
//! a stress test of the same assertions. So a model file always builds to
//! a binary that checks something, never to one with no tests.
//!
//! The model files take their threads and primitives from here
//! ([`thread`], [`sync`]), so one file serves both configurations.

#[cfg(loom)]
pub use loom::{sync, thread};
#[cfg(not(loom))]
pub use std::{sync, thread};

/// Runs of a model on std's threads, without `--cfg loom`.
pub const STD_RUNS: usize = 200;

/// Runs the model `f`: under `cfg(loom)`, in every interleaving with at
/// most `preemptions` preemptions; otherwise [`STD_RUNS`] times.
///
/// # Examples
///
/// ```
/// use wheel_testkit::model::{self, sync::Arc, sync::atomic::{AtomicUsize, Ordering}, thread};
///
/// model::check(2, || {
///     let n = Arc::new(AtomicUsize::new(0));
///     let m = n.clone();
///     let t = thread::spawn(move || m.fetch_add(1, Ordering::SeqCst));
///     n.fetch_add(1, Ordering::SeqCst);
///     t.join().unwrap();
///     assert_eq!(n.load(Ordering::SeqCst), 2);
/// });
/// ```
pub fn check(preemptions: usize, f: impl Fn() + Sync + Send + 'static) {
    #[cfg(loom)]
    {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(preemptions);
        b.check(f);
    }
    #[cfg(not(loom))]
    {
        // The bound is loom's; std's threads interleave as they will.
        let _ = preemptions;
        for _ in 0..STD_RUNS {
            f();
        }
    }
}
