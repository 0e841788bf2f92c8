//! Arbitrary bytes as the body of `POST /v1/timers` and of
//! `POST /v1/timers:batch`: decoding and checking must never panic, a
//! refusal must be a client error naming a field, and an accepted timer
//! must hold what the API promises (the harness is
//! `wheel-server/src/fuzzing.rs`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let _accepted = wheel_server::fuzzing::decode_and_check(bytes);
});
