//! Random insert / insert_at / remove / reset / reset_at / try_take / clock
//! advances / close / drain on a `DelayQueue<u64>` driven by a
//! `ManualClock` (one thread), checked step by step against the reference
//! model in ticks and, independently, against the clock in `Instant`s
//! (never early).
#![no_main]

use libfuzzer_sys::fuzz_target;
use wheel::fuzzing::{run_delay_queue, DqInput};

fuzz_target!(|input: DqInput| {
    run_delay_queue(&input);
});
