//! The Redis store's Lua code: one Redis function library, and the same
//! bodies as `EVALSHA` scripts for servers without functions (before
//! Redis 7).
//!
//! The library (`#!lua name=wheel_<h>`, `<h>` the first 8 hex digits of
//! the SHA-1 of its code) holds, once at its top level: the flow
//! constants of `flow_state.rs`, `prelude.lua` (the record layouts, the
//! read caches, the writes), `schedule.lua` (the schedule rules) and
//! `flow.lua` (flow control); then each script file's body as the
//! function `wheel_<h>_<script>`, whose callback is `function(KEYS, ARGV)
//! begin(KEYS, ARGV) <body> end`. Its top level runs once, at load; each
//! call pays only `begin` (which resets every per-call value of the
//! prelude) and its body. The name carries the hash, so nodes of two
//! versions can share a server: each loads and calls its own library.
//!
//! A script, for the fallback, is the same text as one chunk: the
//! prelude (with `schedule.lua` and `flow.lua` for the scripts that use
//! them), then its callback, called with the script's KEYS and ARGV. Each
//! compiles once into its SHA.
//!
//! Invariant: every body's text appears once in the source, and both
//! forms run it after `begin`.
//!
//! Node state: none (the code's text).

use redis::Script;

use crate::store::flow_state::{MAX_RETRY_AFTER, RATE_HORIZON, WAKE_SPAN};

/// One operation: its function in the library and its script.
pub(super) struct Op {
    /// `wheel_<h>_<script>`.
    pub(super) function: String,
    /// The fallback script (its SHA and text).
    pub(super) script: Script,
    text: String,
}

impl Op {
    /// The fallback script's text, for `SCRIPT LOAD`.
    pub(super) fn text(&self) -> &str {
        &self.text
    }
}

/// A script file: its name, body, whether it uses the schedule rules and
/// flow control (the fallback script includes only what it uses), and
/// whether it only reads.
struct Source {
    name: &'static str,
    body: &'static str,
    schedules: bool,
    flows: bool,
    reads: bool,
}

macro_rules! source {
    ($name:literal, $schedules:literal, $flows:literal) => {
        source!($name, $schedules, $flows, false)
    };
    ($name:literal, $schedules:literal, $flows:literal, $reads:literal) => {
        Source {
            name: $name,
            body: include_str!(concat!($name, ".lua")),
            schedules: $schedules,
            flows: $flows,
            reads: $reads,
        }
    };
}

/// Every script file, in the order of [`Scripts`]' fields.
const SOURCES: [Source; 19] = [
    source!("add", false, false),
    source!("cancel", true, false),
    source!("reschedule", false, false),
    source!("get", false, false, true),
    source!("ended", false, false, true),
    source!("claim", true, true),
    source!("start", true, true),
    source!("renew", false, false),
    source!("finish", true, true),
    source!("release", false, false),
    source!("dead_letters", false, false, true),
    source!("retry_dead", false, false),
    source!("counts", false, false, true),
    source!("list", false, false, true),
    source!("schedule_write", true, false),
    source!("schedules", true, false, true),
    source!("pause", false, true),
    source!("flows", false, true),
    source!("defer", false, true),
];

/// The Lua constants `flow.lua` takes from `flow_state.rs`.
fn constants() -> String {
    format!(
        "local RATE_HORIZON_US, MAX_RETRY_AFTER, WAKE_SPAN = {}, {}, {}\n",
        RATE_HORIZON * 1000,
        MAX_RETRY_AFTER,
        WAKE_SPAN
    )
}

/// A body as a function of the call's KEYS and ARGV (the names the
/// bodies use), starting with `begin`.
fn callback(body: &str) -> String {
    format!("function(KEYS, ARGV) begin(KEYS, ARGV)\n{body}\nend")
}

/// The fallback script of `s`: what it uses, then its callback, called.
fn script_text(s: &Source) -> String {
    let mut parts = Vec::with_capacity(5);
    if s.flows {
        parts.push(constants());
    }
    parts.push(include_str!("prelude.lua").to_owned());
    if s.schedules {
        parts.push(include_str!("schedule.lua").to_owned());
    }
    if s.flows {
        parts.push(include_str!("flow.lua").to_owned());
    }
    parts.push(format!("return ({})(KEYS, ARGV)\n", callback(s.body)));
    parts.concat()
}

/// The library's code after its two header lines: everything shared once,
/// then one registration per script, named with `P` (the header's
/// `wheel_<h>_`). A reading one says `no-writes`: like a script, it runs
/// on a server refusing writes (over `maxmemory`), where Redis refuses a
/// function that may write before it starts.
fn library_code() -> String {
    let mut code = [
        constants().as_str(),
        include_str!("prelude.lua"),
        include_str!("schedule.lua"),
        include_str!("flow.lua"),
    ]
    .concat();
    for s in &SOURCES {
        let flags = if s.reads { "{ 'no-writes' }" } else { "{}" };
        code.push_str(&format!(
            "redis.register_function{{function_name = P .. '{}', flags = {flags}, callback = {}}}\n",
            s.name,
            callback(s.body)
        ));
    }
    code
}

/// The library and the scripts, built once per store.
pub(super) struct Scripts {
    /// `wheel_<h>`.
    pub(super) library_name: String,
    /// The library's text, for `FUNCTION LOAD`.
    pub(super) library: String,
    pub(super) add: Op,
    pub(super) cancel: Op,
    pub(super) reschedule: Op,
    pub(super) get: Op,
    pub(super) ended: Op,
    pub(super) claim: Op,
    pub(super) start: Op,
    pub(super) renew: Op,
    pub(super) finish: Op,
    pub(super) release: Op,
    pub(super) dead_letters: Op,
    pub(super) retry_dead: Op,
    pub(super) counts: Op,
    pub(super) list: Op,
    pub(super) schedule_write: Op,
    pub(super) schedules: Op,
    pub(super) pause: Op,
    pub(super) flows: Op,
    pub(super) defer: Op,
}

impl Scripts {
    pub(super) fn new() -> Scripts {
        let code = library_code();
        // A SHA-1, as Redis names scripts; 8 hex digits tell versions apart.
        let library_name = format!("wheel_{}", &Script::new(&code).get_hash()[..8]);
        let library = format!("#!lua name={library_name}\nlocal P = '{library_name}_'\n{code}");
        let [
            add,
            cancel,
            reschedule,
            get,
            ended,
            claim,
            start,
            renew,
            finish,
            release,
            dead_letters,
            retry_dead,
            counts,
            list,
            schedule_write,
            schedules,
            pause,
            flows,
            defer,
        ] = SOURCES.map(|s| {
            let text = script_text(&s);
            Op {
                function: format!("{library_name}_{}", s.name),
                script: Script::new(&text),
                text,
            }
        });
        Scripts {
            library_name,
            library,
            add,
            cancel,
            reschedule,
            get,
            ended,
            claim,
            start,
            renew,
            finish,
            release,
            dead_letters,
            retry_dead,
            counts,
            list,
            schedule_write,
            schedules,
            pause,
            flows,
            defer,
        }
    }
}
