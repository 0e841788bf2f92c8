//! Random layouts and operation sequences on `Wheel<u64>`, checked step by
//! step against the reference model (see `wheel/src/core/testing/`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use wheel::fuzzing::{run_wheel, WheelInput};

fuzz_target!(|input: WheelInput| {
    run_wheel(&input);
});
