//! Arbitrary (mostly invalid) layouts must be rejected with a `ConfigError`
//! exactly when they break the rules, never panic; accepted layouts then
//! take extreme ticks (0, `u64::MAX`, powers of two, level edges, huge
//! jumps) and must still agree with the reference model.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wheel::fuzzing::{run_config, ConfigInput};

fuzz_target!(|input: ConfigInput| {
    run_config(&input);
});
