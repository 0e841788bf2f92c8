//! The loom models of `tests/loom/delay_queue.rs` (see its module doc), built with
//! the feature `loom` and run under `--cfg loom`:
//! `RUSTFLAGS="--cfg loom" cargo test --release -p wheel --features loom --test loom_delay_queue`

// Without `--cfg loom` this would be a binary with no tests that passes:
// it refuses to build instead.
#[cfg(not(loom))]
compile_error!("the loom models run with RUSTFLAGS=\"--cfg loom\"");

#[cfg(loom)]
#[path = "loom/delay_queue.rs"]
mod models;
