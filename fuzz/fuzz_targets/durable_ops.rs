//! Random adds (replace and if-absent), cancels, reschedules, claims,
//! batches of starts, renewals, finishes and releases with stale fences,
//! lease expiries, clock jumps and listings, on the reference model and
//! the embedded store under one manual clock, compared after every step.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wheel_durable::fuzzing::{run_durable_ops, DurableOp};

fuzz_target!(|ops: Vec<DurableOp>| {
    run_durable_ops(&ops);
});
