//! The Redis store's Lua scripts, each the shared prelude (`prelude.lua`:
//! the record layouts, the read cache, the writes) followed by its own
//! file, and for the scripts that touch schedules, `schedule.lua` (the
//! schedule rules) between them. Each compiles once into its SHA.
//!
//! Node state: none (the scripts' text).

use redis::Script;

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
            claim: script!(schedules, "claim.lua"),
            start: script!(schedules, "start.lua"),
            renew: script!("renew.lua"),
            finish: script!(schedules, "finish.lua"),
            release: script!("release.lua"),
            dead_letters: script!("dead_letters.lua"),
            retry_dead: script!("retry_dead.lua"),
            counts: script!("counts.lua"),
            list: script!("list.lua"),
            schedule_write: script!(schedules, "schedule_write.lua"),
            schedules: script!(schedules, "schedules.lua"),
            pause: script!("pause.lua"),
            flows: script!("flows.lua"),
        }
    }
}
