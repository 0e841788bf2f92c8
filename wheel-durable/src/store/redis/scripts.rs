//! The Redis store's Lua scripts, each the shared prelude (`prelude.lua`:
//! the record layouts, the read cache, the writes) followed by its own
//! file, and between them `schedule.lua` (the schedule rules) for the
//! scripts that touch schedules and `flow.lua` (flow control, after the
//! flow constants of `flow_state.rs`) for those that touch flow keys. Each
//! compiles once into its SHA.
//!
//! Node state: none (the scripts' text).

use redis::Script;

use crate::store::flow_state::{MAX_RETRY_AFTER, RATE_HORIZON};

macro_rules! script {
    ($file:literal) => {
        Script::new(concat!(include_str!("prelude.lua"), include_str!($file)))
    };
    // With the schedule rules, for the scripts that touch schedules.
    (schedules, $file:literal) => {
        Script::new(concat!(
            include_str!("prelude.lua"),
            include_str!("schedule.lua"),
            include_str!($file)
        ))
    };
    // With flow control, for the scripts that touch flow keys.
    (flows, $file:literal) => {
        with_flows("", include_str!($file))
    };
    (schedules, flows, $file:literal) => {
        with_flows(include_str!("schedule.lua"), include_str!($file))
    };
}

/// The script of `file` with the prelude, `schedules` (the schedule rules
/// or nothing) and `flow.lua`, the Rust constants it uses first.
fn with_flows(schedules: &str, file: &str) -> Script {
    let constants = format!(
        "local RATE_HORIZON_US, MAX_RETRY_AFTER = {}, {}\n",
        RATE_HORIZON * 1000,
        MAX_RETRY_AFTER
    );
    Script::new(
        &[
            constants.as_str(),
            include_str!("prelude.lua"),
            schedules,
            include_str!("flow.lua"),
            file,
        ]
        .concat(),
    )
}

/// The scripts, each compiled once into its SHA.
pub(super) struct Scripts {
    pub(super) add: Script,
    pub(super) cancel: Script,
    pub(super) reschedule: Script,
    pub(super) get: Script,
    pub(super) ended: Script,
    pub(super) claim: Script,
    pub(super) start: Script,
    pub(super) renew: Script,
    pub(super) finish: Script,
    pub(super) release: Script,
    pub(super) dead_letters: Script,
    pub(super) retry_dead: Script,
    pub(super) counts: Script,
    pub(super) list: Script,
    pub(super) schedule_write: Script,
    pub(super) schedules: Script,
    pub(super) pause: Script,
    pub(super) flows: Script,
}

impl Scripts {
    pub(super) fn new() -> Scripts {
        Scripts {
            add: script!("add.lua"),
            cancel: script!(schedules, "cancel.lua"),
            reschedule: script!("reschedule.lua"),
            get: script!("get.lua"),
            ended: script!("ended.lua"),
            claim: script!(schedules, flows, "claim.lua"),
            start: script!(schedules, flows, "start.lua"),
            renew: script!("renew.lua"),
            finish: script!(schedules, flows, "finish.lua"),
            release: script!("release.lua"),
            dead_letters: script!("dead_letters.lua"),
            retry_dead: script!("retry_dead.lua"),
            counts: script!("counts.lua"),
            list: script!("list.lua"),
            schedule_write: script!(schedules, "schedule_write.lua"),
            schedules: script!(schedules, "schedules.lua"),
            pause: script!(flows, "pause.lua"),
            flows: script!(flows, "flows.lua"),
        }
    }
}
