//! A node as a process of its own, for the kill workload: a hidden mode of
//! the `wheel-bench` binary (`--durable-node SPEC`), and the parent's side
//! that starts such processes and reads what they report.
//!
//! The process fires with ours or the peer until its standard input
//! closes, then stops cleanly. It prints one line per event, flushed at
//! once so that the parent has every line written before a SIGKILL:
//! `ready` when firing, `f INDEX UNIX_NS FENCE` when a handler starts (the
//! peer has no fences: 0), `d INDEX` when it ends, (ours) `s INDEX FENCE
//! 1|0` once the store answered that run's outcome, recorded or refused,
//! and (the peer) `c N` when a tick took N tasks, before they run.
//!
//! The `s` lines come from the durable tier's TRACE event "outcome
//! settled", which the process subscribes to (`Settled`): a run whose
//! outcome the store recorded must never run again, while one the node
//! died with before that may (at-least-once), and only the node learns
//! which.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use wheel_durable::{Fired, Outcome};

use super::ours::{self, Store};
use super::peer::{PeerNode, SecondWheel, Task};
use super::{index_of, unix_ns};

/// Which implementation a node process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Our durable timers on Redis.
    Ours,
    /// The one-second Redis time wheel.
    Peer,
}

/// What a node process runs, passed as one argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSpec {
    /// Ours or the peer.
    pub kind: Kind,
    /// Handler threads (ours) or task runners (the peer).
    pub workers: usize,
    /// Our lease, ms.
    pub lease_ms: u64,
    /// How long each handler works, µs.
    pub work_us: u64,
    /// Our namespace or the peer's key prefix.
    pub namespace: String,
    /// The Redis server.
    pub url: String,
}

impl NodeSpec {
    /// `ours|peer,WORKERS,LEASE_MS,WORK_US,NAMESPACE,URL`.
    pub fn to_arg(&self) -> String {
        let kind = match self.kind {
            Kind::Ours => "ours",
            Kind::Peer => "peer",
        };
        format!(
            "{kind},{},{},{},{},{}",
            self.workers, self.lease_ms, self.work_us, self.namespace, self.url
        )
    }

    /// The inverse of [`to_arg`](Self::to_arg).
    pub fn parse(arg: &str) -> Result<NodeSpec, String> {
        let f: Vec<&str> = arg.splitn(6, ',').collect();
        let [kind, workers, lease, work, ns, url] = f[..] else {
            return Err(format!("a node spec has 6 fields: {arg:?}"));
        };
        let num = |s: &str| s.parse::<u64>().map_err(|e| format!("{s:?}: {e}"));
        Ok(NodeSpec {
            kind: match kind {
                "ours" => Kind::Ours,
                "peer" => Kind::Peer,
                other => return Err(format!("unknown node kind {other:?}")),
            },
            workers: num(workers)? as usize,
            lease_ms: num(lease)?,
            work_us: num(work)?,
            namespace: ns.to_owned(),
            url: url.to_owned(),
        })
    }
}

/// Prints one line and flushes it.
fn emit(line: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_fmt(line);
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}

/// Reports a handler's start, works, reports its end.
fn handle(key: &[u8], fence: u64, work: Duration) {
    let start = unix_ns(SystemTime::now());
    let i = index_of(key).unwrap_or(usize::MAX);
    emit(format_args!("f {i} {start} {fence}"));
    std::thread::sleep(work);
    emit(format_args!("d {i}"));
}

/// The hidden mode: runs the node `spec` until standard input closes.
pub fn run(spec: &str) -> Result<(), String> {
    let spec = NodeSpec::parse(spec)?;
    let work = Duration::from_micros(spec.work_us);
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let wait_for_stdin = || for _ in std::io::stdin().lock().lines().map_while(Result::ok) {};
    match spec.kind {
        Kind::Ours => {
            let settled = Settled(Box::new(|l: &str| emit(format_args!("{l}"))));
            tracing::subscriber::set_global_default(settled).map_err(|e| err(&e))?;
            let timers = ours::builder(&Store::Redis(spec.url.clone()), &spec.namespace)
                .workers(spec.workers)
                .lease(Duration::from_millis(spec.lease_ms))
                .handler(move |t: &Fired| {
                    handle(t.key.as_bytes(), t.fence, work);
                    Outcome::Done
                })
                .build()
                .map_err(|e| err(&e))?;
            emit(format_args!("ready"));
            wait_for_stdin();
            timers.shutdown().map_err(|e| err(&e))
        }
        Kind::Peer => {
            let wheel = SecondWheel::open(&spec.url, &spec.namespace).map_err(|e| err(&e))?;
            let run = Arc::new(move |t: &Task| handle(&t.key, 0, work));
            let took = Box::new(|n: usize| emit(format_args!("c {n}")));
            let node = PeerNode::start(Arc::new(wheel), spec.workers, run, Some(took));
            emit(format_args!("ready"));
            wait_for_stdin();
            node.stop();
            Ok(())
        }
    }
}

/// The node process's `tracing` subscriber: prints an `s` line for each
/// "outcome settled" event of the durable tier's node and drops every
/// other event (nothing printed them here before either). Hands each line
/// to its function.
struct Settled(Box<dyn Fn(&str) + Send + Sync>);

impl tracing::Subscriber for Settled {
    fn enabled(&self, m: &tracing::Metadata<'_>) -> bool {
        *m.level() == tracing::Level::TRACE && m.target().starts_with("wheel_durable::node")
    }

    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        // Spans are not followed: any id will do.
        tracing::span::Id::from_u64(1)
    }

    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}

    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}

    fn event(&self, event: &tracing::Event<'_>) {
        let mut f = SettledFields::default();
        event.record(&mut f);
        if let (true, Some(i), Some(fence), Some(recorded)) =
            (f.settled, f.index, f.fence, f.recorded)
        {
            (self.0)(&format!("s {i} {fence} {}", u8::from(recorded)));
        }
    }

    fn enter(&self, _: &tracing::span::Id) {}

    fn exit(&self, _: &tracing::span::Id) {}
}

/// The fields of one event, as far as [`Settled`] needs them.
#[derive(Default)]
struct SettledFields {
    /// Its message is "outcome settled".
    settled: bool,
    index: Option<usize>,
    fence: Option<u64>,
    recorded: Option<bool>,
}

impl tracing::field::Visit for SettledFields {
    fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
        if field.name() == "fence" {
            self.fence = Some(value);
        }
    }

    fn record_bool(&mut self, field: &tracing::field::Field, value: bool) {
        if field.name() == "recorded" {
            self.recorded = Some(value);
        }
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "message" => self.settled = format!("{value:?}") == "outcome settled",
            // Logged with `?`: the key in quotes.
            "key" => self.index = index_of(format!("{value:?}").trim_matches('"').as_bytes()),
            _ => {}
        }
    }
}

/// A line from a node process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// It is firing.
    Ready,
    /// A handler started: index, ns since the epoch, the run's fence (0
    /// for the peer).
    Started(usize, i64, u64),
    /// A handler ended.
    Ended(usize),
    /// The store answered a run's outcome: index, fence, whether it
    /// recorded it.
    Settled(usize, u64, bool),
    /// A tick took this many tasks.
    Took(usize),
    /// Its output ended (it exited or was killed).
    Gone,
}

/// The event of one output line (`None` for anything else).
pub fn parse_line(line: &str) -> Option<Event> {
    let mut f = line.split_whitespace();
    let ev = match f.next()? {
        "ready" => Event::Ready,
        "f" => Event::Started(
            f.next()?.parse().ok()?,
            f.next()?.parse().ok()?,
            f.next()?.parse().ok()?,
        ),
        "d" => Event::Ended(f.next()?.parse().ok()?),
        "s" => Event::Settled(
            f.next()?.parse().ok()?,
            f.next()?.parse().ok()?,
            match f.next()? {
                "1" => true,
                "0" => false,
                _ => return None,
            },
        ),
        "c" => Event::Took(f.next()?.parse().ok()?),
        _ => return None,
    };
    Some(ev)
}

/// A node process started by this one.
pub struct NodeProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    reader: Option<JoinHandle<()>>,
}

impl NodeProcess {
    /// Starts `exe --durable-node SPEC`; its events arrive on `events`
    /// tagged with `id`.
    pub fn spawn(
        exe: &Path,
        spec: &NodeSpec,
        id: usize,
        events: mpsc::Sender<(usize, Event)>,
    ) -> std::io::Result<NodeProcess> {
        let mut child = Command::new(exe)
            .arg("--durable-node")
            .arg(spec.to_arg())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdout = child.stdout.take().expect("piped");
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(ev) = parse_line(&line) {
                    let _ = events.send((id, ev));
                }
            }
            let _ = events.send((id, Event::Gone));
        });
        Ok(NodeProcess {
            stdin: child.stdin.take(),
            child,
            reader: Some(reader),
        })
    }

    /// SIGKILL: the node stops at once, mid-whatever.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
    }

    /// Closes its standard input (it stops cleanly) and waits up to
    /// `patience` before killing it.
    pub fn finish(mut self, patience: Duration) {
        drop(self.stdin.take());
        let until = std::time::Instant::now() + patience;
        while matches!(self.child.try_wait(), Ok(None)) && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        self.kill();
        let _ = self.child.wait();
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_round_trip() {
        let spec = NodeSpec {
            kind: Kind::Peer,
            workers: 8,
            lease_ms: 2_000,
            work_us: 5_000,
            namespace: "kill".into(),
            url: "redis://127.0.0.1:6379/0".into(),
        };
        assert_eq!(NodeSpec::parse(&spec.to_arg()), Ok(spec));
        assert!(NodeSpec::parse("ours,1,2").is_err());
        assert!(NodeSpec::parse("mine,1,2,3,ns,url").is_err());
        assert!(NodeSpec::parse("ours,x,2,3,ns,url").is_err());
    }

    #[test]
    fn settled_outcomes_become_lines_and_other_events_nothing() {
        let lines = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = lines.clone();
        let settled = Settled(Box::new(move |l: &str| {
            sink.lock().unwrap().push(l.to_owned())
        }));
        tracing::subscriber::with_default(settled, || {
            let key = super::super::key(12);
            tracing::trace!(target: "wheel_durable::node::finisher", namespace = "n", key = ?key, fence = 7_u64, recorded = true, "outcome settled");
            tracing::trace!(target: "wheel_durable::node::finisher", key = ?key, fence = 8_u64, recorded = false, "outcome settled");
            tracing::trace!(target: "wheel_durable::node::finisher", key = ?key, fence = 9_u64, recorded = true, "something else");
            tracing::warn!(target: "wheel_durable::node::finisher", key = ?key, fence = 9_u64, recorded = true, "outcome settled");
            // Another crate's event of the same name.
            tracing::trace!(key = ?key, fence = 9_u64, recorded = true, "outcome settled");
        });
        assert_eq!(*lines.lock().unwrap(), ["s 12 7 1", "s 12 8 0"]);
        let parsed: Vec<_> = lines
            .lock()
            .unwrap()
            .iter()
            .map(|l| parse_line(l))
            .collect();
        assert_eq!(
            parsed,
            [
                Some(Event::Settled(12, 7, true)),
                Some(Event::Settled(12, 8, false))
            ]
        );
    }

    #[test]
    fn lines_become_events() {
        assert_eq!(parse_line("ready"), Some(Event::Ready));
        assert_eq!(parse_line("f 12 345 7"), Some(Event::Started(12, 345, 7)));
        assert_eq!(parse_line("d 12"), Some(Event::Ended(12)));
        assert_eq!(parse_line("s 12 7 1"), Some(Event::Settled(12, 7, true)));
        assert_eq!(parse_line("s 12 7 0"), Some(Event::Settled(12, 7, false)));
        assert_eq!(parse_line("s 12 7 yes"), None);
        assert_eq!(parse_line("f 12 345"), None);
        assert_eq!(parse_line("c 900"), Some(Event::Took(900)));
        assert_eq!(parse_line("hello"), None);
    }
}
