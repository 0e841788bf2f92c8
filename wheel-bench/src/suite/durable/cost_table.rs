//! The table of Redis's time by script (the slow log's split of a run's
//! Redis time), its rows and its notes.

use super::tables::secs;
use crate::durable::script_cost::Costs;
use crate::durable::throughput::{FireRate, ThroughputParams};
use crate::report::Table;
use crate::suite::fmt_count;

/// The table of Redis's time by script, without rows.
pub(super) fn script_cost(p: &ThroughputParams) -> Table {
    Table::new(
        "Durable timers: Redis's time by script",
        &format!(
            "Ours on Redis, each run on an emptied server with Redis's slow log logging every command \
             (`slowlog-log-slower-than 0`, up to {} entries, drained every {} ms): the fire rate with 3 \
             nodes ({} timers due at one instant, added with `add_many` while the nodes run: the \
             adding's calls are in the figures), and single adds (`add_at`, an hour out) from {} \
             threads for {} s. Per script (named by the function, or for `EVALSHA` by the shape of \
             its arguments): calls; execution µs per call, its 99th percentile and its slowest \
             call (a call holds Redis, one command at a time, for that long); timers per call (the timers its \
             arguments name; for claim, the run's timers over its calls); µs per fired timer (per \
             add): its µs over the run's timers (adds). All scripts: their sum; for the fire run \
             also without add, the firing alone. `INFO cpu`: the server's CPU over the same \
             interval per timer (add), its main thread and, in brackets, every thread. The slow \
             log times execution only; `INFO cpu` also counts reading commands, writing replies \
             and the server's upkeep (in the fire run, the wait before the due time too), so it \
             is the larger. Commands other than scripts are listed by name; the commands scripts \
             call (logged too) and the measurement's own (`SLOWLOG`, `CONFIG`, `INFO`, `MULTI`) \
             are left out. The note gives the fire rate without the slow log and with it: the \
             log's own cost.",
            fmt_count(crate::durable::slowlog::MAX_LEN as usize),
            crate::durable::slowlog::DRAIN_EVERY.as_millis(),
            fmt_count(p.fire),
            p.threads,
            secs(p.add_for)
        ),
        &[
            "run",
            "script",
            "calls",
            "µs per call",
            "p99 µs",
            "max µs",
            "timers per call",
            "µs per timer (add)",
        ],
    )
}

/// One run's rows of [`script_cost`]: a row per callee, all the scripts
/// (for a `fire` run also all but add), and `INFO cpu`.
pub(super) fn script_cost_rows(run: &str, c: &Costs, fire: bool) -> Vec<Vec<String>> {
    let per = |calls: u64, v: u64| match calls {
        0 => "-".to_string(),
        n => format!("{:.1}", v as f64 / n as f64),
    };
    let per_unit = |micros: f64| format!("{:.2}", micros / c.units.max(1) as f64);
    let mut rows: Vec<Vec<String>> = c
        .rows
        .iter()
        .map(|r| {
            vec![
                run.into(),
                r.name.clone(),
                fmt_count(r.calls as usize),
                per(r.calls, r.micros),
                r.p99.to_string(),
                r.max.to_string(),
                r.timers.map_or("-".into(), |t| per(r.calls, t)),
                per_unit(r.micros as f64),
            ]
        })
        .collect();
    // A sum over scripts: no percentiles or timers per call of its own.
    let total = |name: &str, calls: u64, micros: u64| {
        vec![
            run.into(),
            name.into(),
            fmt_count(calls as usize),
            per(calls, micros),
            "-".into(),
            "-".into(),
            "-".into(),
            per_unit(micros as f64),
        ]
    };
    let (calls, micros) = c.scripts();
    let adding = c.rows.iter().find(|r| r.name == "add" && r.calls < calls);
    if let (true, Some(add)) = (fire, adding) {
        // The adding before the due time is not firing: the firing alone
        // is what a target per fired timer judges.
        let (calls, micros) = (calls - add.calls, micros - add.micros);
        rows.push(total("all scripts but add (the firing)", calls, micros));
    }
    rows.push(total("all scripts", calls, micros));
    let main = c.cpu.main.map_or("-".into(), |m| per_unit(m * 1e6));
    rows.push(vec![
        run.into(),
        "`INFO cpu`, main thread (all threads)".into(),
        "-".into(),
        "-".into(),
        "-".into(),
        "-".into(),
        "-".into(),
        format!("{main} ({})", per_unit(c.cpu.server * 1e6)),
    ]);
    rows
}

/// The note under [`script_cost`] on one run: the entries the slow log
/// dropped, if any, and for the fire run the log's own cost.
pub(super) fn script_cost_note(
    run: &str,
    c: &Costs,
    fire: Option<(&FireRate, &FireRate)>,
) -> String {
    let missed = match c.missed {
        0 => "the slow log dropped no entry".to_string(),
        n => format!("the slow log dropped {n} entries: the figures miss them"),
    };
    let missed = format!(
        "{missed} (at most {} in one drain, of {}; {} commands the scripts called left out)",
        fmt_count(c.most as usize),
        fmt_count(crate::durable::slowlog::MAX_LEN as usize),
        fmt_count(c.inner as usize)
    );
    let cost = fire.map_or(String::new(), |(without, with)| {
        format!(
            "; fire rate {}/s without the slow log, {}/s with it ({:+.0} %); checks: {} without, {} with",
            without.cell(),
            with.cell(),
            (with.per_sec / without.per_sec - 1.0) * 100.0,
            without.summary.check().label(),
            with.summary.check().label()
        )
    });
    let units = if fire.is_some() {
        "timers fired"
    } else {
        "adds"
    };
    format!(
        "{run}: {} {units}, {missed}{cost}.",
        fmt_count(c.units as usize)
    )
}
