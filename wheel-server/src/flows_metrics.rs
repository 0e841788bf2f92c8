//! The flow keys' gauges of `GET /metrics`, from one
//! [`DurableTimers::flows`](wheel_durable::DurableTimers::flows) read per
//! scrape.
//!
//! The number of series is bounded: at most `--metrics-flow-keys` keys
//! get their own `flow` label, those with the most parked, waiting and
//! in-flight timers (ties in byte order); the rest are summed into
//! `flow="other"`, whose `wheel_flow_paused` is then the number of paused
//! keys in it, its `wheel_flow_breaker` the number of keys in each state,
//! and its lateness the largest of theirs. A key literally named `other`
//! is always summed there, never shown alone, so that no two series share
//! their labels. When the read fails the gauges have no sample (a
//! scraper sees them absent, never a zero that was not counted).

use std::fmt::Write;

use wheel_durable::{BreakerState, FlowStatus, Flows};

/// The label value of the keys summed together.
pub(crate) const OTHER: &str = "other";

/// One series' values: a key's own, or the sum of the others.
#[derive(Debug, Default, Clone, PartialEq)]
struct Row {
    paused: u64,
    parked: u64,
    in_flight: u64,
    waiting: u64,
    /// Keys in each breaker state: closed, open, half-open.
    breaker: [u64; 3],
    lateness_p99: Option<f64>,
}

impl Row {
    fn of(k: &FlowStatus) -> Row {
        let mut breaker = [0; 3];
        breaker[state_index(k.breaker.state)] = 1;
        Row {
            paused: u64::from(k.paused),
            parked: k.parked,
            in_flight: u64::from(k.in_flight),
            waiting: k.waiting,
            breaker,
            lateness_p99: k.lateness_p99.map(|d| d.as_secs_f64()),
        }
    }

    fn add(&mut self, o: &Row) {
        self.paused += o.paused;
        self.parked += o.parked;
        self.in_flight += o.in_flight;
        self.waiting += o.waiting;
        for (a, b) in self.breaker.iter_mut().zip(o.breaker) {
            *a += b;
        }
        self.lateness_p99 = match (self.lateness_p99, o.lateness_p99) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }
}

/// One value of a [`Row`].
type Field = fn(&Row) -> u64;

const STATES: [&str; 3] = ["closed", "open", "half-open"];

fn state_index(s: BreakerState) -> usize {
    match s {
        BreakerState::Open => 1,
        BreakerState::HalfOpen => 2,
        _ => 0,
    }
}

/// A label value, escaped as the text format requires.
pub(crate) fn escape(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// The series to write: at most `max` keys of their own, then `other`
/// if any key was left; and how many keys `other` sums.
fn rows(flows: &Flows, max: usize) -> (Vec<(String, Row)>, u64) {
    let load = |k: &FlowStatus| {
        k.parked
            .saturating_add(k.waiting)
            .saturating_add(u64::from(k.in_flight))
    };
    let mut keys: Vec<&FlowStatus> = flows.keys.iter().filter(|k| k.key != OTHER).collect();
    // Most load first; ties in byte order, so the chosen keys are stable
    // between scrapes.
    keys.sort_by(|a, b| load(b).cmp(&load(a)).then_with(|| a.key.cmp(&b.key)));
    let rest = keys.split_off(max.min(keys.len()));
    let mut out: Vec<(String, Row)> = keys.iter().map(|k| (escape(&k.key), Row::of(k))).collect();
    let named_other = flows.keys.iter().filter(|k| k.key == OTHER);
    let mut other = Row::default();
    let mut n = 0;
    for k in rest.into_iter().chain(named_other) {
        other.add(&Row::of(k));
        n += 1;
    }
    if n > 0 {
        out.push((OTHER.to_owned(), other));
    }
    (out, n)
}

/// Writes the flow gauges; `flows` is `None` when the read failed.
pub(crate) fn render(out: &mut String, flows: Option<&Flows>, max: usize) {
    let (rows, other) = flows.map(|f| rows(f, max)).unwrap_or_default();
    let paused = flows.map(|f| u8::from(f.paused));
    let _ = writeln!(
        out,
        "# HELP wheel_flows_all_paused 1 when the whole namespace is paused.\n# TYPE wheel_flows_all_paused gauge"
    );
    if let Some(p) = paused {
        let _ = writeln!(out, "wheel_flows_all_paused {p}");
    }
    #[rustfmt::skip]
    let gauges: [(&str, &str, Field); 4] = [
        ("wheel_flow_paused", "1 when the flow key is paused (for other: how many of its keys are).", |r| r.paused),
        ("wheel_flow_parked", "The flow key's timers parked in the store (all nodes).", |r| r.parked),
        ("wheel_flow_in_flight", "The flow key's runs holding a permit of its parallelism (all nodes).", |r| r.in_flight),
        ("wheel_flow_waiting", "The flow key's timers this node holds back for its rate or parallelism.", |r| r.waiting),
    ];
    for (name, help, value) in gauges {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
        for (key, row) in &rows {
            let _ = writeln!(out, "{name}{{flow=\"{key}\"}} {}", value(row));
        }
    }
    out.push_str("# HELP wheel_flow_breaker 1 for the state the flow key's circuit breaker is in (for other: how many of its keys are).\n# TYPE wheel_flow_breaker gauge\n");
    for (key, row) in &rows {
        for (state, n) in STATES.iter().zip(row.breaker) {
            let _ = writeln!(
                out,
                "wheel_flow_breaker{{flow=\"{key}\",state=\"{state}\"}} {n}"
            );
        }
    }
    out.push_str("# HELP wheel_flow_lateness_p99_seconds The 99th percentile of the flow key's lateness on this node (for other: the largest).\n# TYPE wheel_flow_lateness_p99_seconds gauge\n");
    for (key, row) in &rows {
        if let Some(p99) = row.lateness_p99 {
            let _ = writeln!(
                out,
                "wheel_flow_lateness_p99_seconds{{flow=\"{key}\"}} {p99}"
            );
        }
    }
    let _ = writeln!(
        out,
        "# HELP wheel_flow_other_keys Flow keys summed under flow=\"other\".\n# TYPE wheel_flow_other_keys gauge"
    );
    if flows.is_some() {
        let _ = writeln!(out, "wheel_flow_other_keys {other}");
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use wheel_durable::DurableTimers;

    use super::*;

    /// The flows of a store with each key paused (the status type has no
    /// public constructor, so the keys come from a real store).
    fn flows_of(keys: &[&str]) -> Flows {
        let dir = tempfile::tempdir().unwrap();
        let timers = DurableTimers::builder()
            .embedded(dir.path().join("t"))
            .build()
            .unwrap();
        for k in keys {
            timers.pause_flow(k).unwrap();
        }
        let flows = timers.flows().unwrap();
        timers.shutdown().unwrap();
        flows
    }

    #[test]
    fn labels_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(escape("https://x.example:1"), "https://x.example:1");
    }

    #[test]
    fn keys_past_the_bound_are_summed_into_other_and_other_itself_too() {
        let mut f = flows_of(&["a", "b", "c", "other", "q\"uote"]);
        f.keys[1].parked = 5;
        f.keys[2].waiting = 2;
        f.keys[3].lateness_p99 = Some(Duration::from_millis(30));
        f.keys[3].breaker.state = BreakerState::Open;
        let mut text = String::new();
        render(&mut text, Some(&f), 2);
        assert!(
            text.contains("\nwheel_flow_parked{flow=\"b\"} 5\n"),
            "{text}"
        );
        assert!(
            text.contains("\nwheel_flow_waiting{flow=\"c\"} 2\n"),
            "{text}"
        );
        // a, other and q"uote: three keys summed, all paused.
        assert!(
            text.contains("\nwheel_flow_paused{flow=\"other\"} 3\n"),
            "{text}"
        );
        assert!(text.contains("\nwheel_flow_breaker{flow=\"other\",state=\"open\"} 1\n"));
        assert!(text.contains("\nwheel_flow_breaker{flow=\"other\",state=\"closed\"} 2\n"));
        assert!(text.contains("\nwheel_flow_lateness_p99_seconds{flow=\"other\"} 0.03\n"));
        assert!(text.contains("\nwheel_flow_other_keys 3\n"));
        assert_eq!(text.matches("wheel_flow_parked{").count(), 3, "{text}");
        assert!(!text.contains("flow=\"a\""), "{text}");
        let mut all = String::new();
        render(&mut all, Some(&f), 50);
        assert!(
            all.contains("\nwheel_flow_paused{flow=\"q\\\"uote\"} 1\n"),
            "{all}"
        );
        assert!(
            all.contains("\nwheel_flow_other_keys 1\n"),
            "other is summed alone: {all}"
        );
    }

    #[test]
    fn a_failed_read_has_no_samples() {
        let mut text = String::new();
        render(&mut text, None, 50);
        assert!(text.contains("# TYPE wheel_flow_parked gauge\n"));
        assert!(!text.contains("\nwheel_flow_other_keys "), "{text}");
        assert!(!text.contains("\nwheel_flows_all_paused "), "{text}");
    }
}
