//! A cron-driven report mailer on durable schedules.
//!
//! ```text
//! cargo run --release -p wheel-durable --example report_mailer
//! cargo run --release -p wheel-durable --features redis --example report_mailer -- --redis redis://127.0.0.1:6379/0
//! ```
//!
//! Two schedules in the store: the weekday sales report, `0 9 * * MON-FRI`
//! in Europe/Berlin (the next run is printed; it is triggered once, so
//! that one "mail" goes out now), and a digest every `--every` seconds
//! (default 2) so that runs show within seconds. Each run prints the
//! schedule, its nominal time (in Berlin) and its lateness (start minus
//! nominal time). After `--seconds` (default 10) the example checks that
//! each digest slot ran once and none early, deletes its schedules and
//! exits: non-zero when a check failed. A cron string with a typo shows
//! the typed error naming the field and the position.
//!
//! On the embedded store in a temporary directory by default; `--redis
//! URL` (with the `redis` feature) keeps the schedules on Redis, in the
//! namespace `report-mailer`. The "mail" is a line on stdout: a real
//! mailer would send it from the handler, which the store calls again
//! (at least once) if the node dies before the run is recorded. The
//! durable tier's log events go to stderr at the level `RUST_LOG` names
//! (`info` by default).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use jiff::Timestamp;
use jiff::tz::TimeZone;
use wheel_durable::schedule::{Schedule, Spec};
use wheel_durable::{DurableTimers, Fired, Outcome};

const ZONE: &str = "Europe/Berlin";

struct Args {
    redis: Option<String>,
    seconds: u64,
    every: u64,
}

fn parse() -> Result<Args, lexopt::Error> {
    use lexopt::prelude::*;
    let mut a = Args {
        redis: None,
        seconds: 10,
        every: 2,
    };
    let mut p = lexopt::Parser::from_env();
    while let Some(arg) = p.next()? {
        match arg {
            Long("redis") => a.redis = Some(p.value()?.string()?),
            Long("seconds") => a.seconds = p.value()?.parse()?,
            Long("every") => a.every = p.value()?.parse()?,
            _ => return Err(arg.unexpected()),
        }
    }
    if a.every == 0 {
        return Err("--every must be at least 1 second".into());
    }
    Ok(a)
}

/// A time as Berlin's wall clock shows it.
fn berlin(t: SystemTime) -> String {
    let zone = TimeZone::get(ZONE).expect("the bundled time-zone database has Berlin");
    Timestamp::try_from(t).map_or_else(
        |_| format!("{t:?}"),
        |ts| {
            ts.to_zoned(zone)
                .strftime("%a %Y-%m-%d %H:%M:%S%.3f %Z")
                .to_string()
        },
    )
}

/// One run as the handler saw it.
struct Sent {
    nominal: SystemTime,
    started: SystemTime,
    triggered: bool,
}

type Log = Arc<Mutex<BTreeMap<String, Vec<Sent>>>>;

/// The mailer: "sends" the payload, prints the run and records it.
fn mailer(log: Log) -> impl Fn(&Fired) -> Outcome + Send + Sync + 'static {
    move |f: &Fired| {
        let started = SystemTime::now();
        let Some(run) = &f.schedule else {
            return Outcome::Done;
        };
        let late = started.duration_since(run.nominal).unwrap_or_default();
        println!(
            "{:<16} {} for {}, {} ms late{}",
            run.id,
            String::from_utf8_lossy(&f.payload),
            berlin(run.nominal),
            late.as_millis(),
            if run.triggered { " (triggered)" } else { "" }
        );
        let sent = Sent {
            nominal: run.nominal,
            started,
            triggered: run.triggered,
        };
        log.lock()
            .unwrap()
            .entry(run.id.clone())
            .or_default()
            .push(sent);
        Outcome::Done
    }
}

fn builder(
    a: &Args,
    dir: &tempfile::TempDir,
) -> Result<wheel_durable::DurableTimersBuilder, String> {
    let b = DurableTimers::builder();
    match &a.redis {
        None => Ok(b.embedded(dir.path().join("schedules"))),
        #[cfg(feature = "redis")]
        Some(url) => Ok(b.redis(url).namespace("report-mailer")),
        #[cfg(not(feature = "redis"))]
        Some(_) => Err("--redis needs the redis feature (--features redis)".into()),
    }
}

fn main() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let a = parse().unwrap_or_else(|e| {
        eprintln!("report_mailer: {e}");
        std::process::exit(2);
    });
    match run(&a) {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("report_mailer: {e}");
            std::process::exit(1);
        }
    }
}

/// Runs the demo; `Ok(false)` when a check failed.
fn run(a: &Args) -> Result<bool, Box<dyn std::error::Error>> {
    // Bad input is a typed error, not a schedule that never runs.
    let typo = Spec::cron("0 9 * * MON-FRY", ZONE).unwrap_err();
    println!("a typo in the cron string is refused: {typo}");
    let dir = tempfile::tempdir()?;
    let log = Log::default();
    let timers = builder(a, &dir)?.handler(mailer(log.clone())).build()?;
    let weekdays = Schedule::builder(Spec::cron("0 9 * * MON-FRI", ZONE)?).build()?;
    timers.upsert_schedule(
        "sales-report",
        &weekdays,
        b"sales report to team@example.com",
    )?;
    let every = Duration::from_secs(a.every);
    let digest = Schedule::builder(Spec::every(every)?).build()?;
    timers.upsert_schedule("digest", &digest, b"digest to ops@example.com")?;
    let next = timers
        .schedule("sales-report")?
        .and_then(|i| i.next_nominal);
    println!(
        "sales-report next runs {}",
        next.map_or("never".into(), berlin)
    );
    // The weekday report once now, beside its chain (a "send it again").
    timers.trigger_schedule("sales-report")?;
    std::thread::sleep(Duration::from_secs(a.seconds));
    let ok = check(&log.lock().unwrap(), every, a.seconds);
    for id in ["sales-report", "digest"] {
        timers.delete_schedule(id)?;
    }
    timers.shutdown()?;
    Ok(ok)
}

/// Each digest slot once, at whole periods, none early; the one triggered
/// report.
fn check(log: &BTreeMap<String, Vec<Sent>>, every: Duration, seconds: u64) -> bool {
    let empty = Vec::new();
    let digest = log.get("digest").unwrap_or(&empty);
    let mut nominals: Vec<SystemTime> = digest.iter().map(|s| s.nominal).collect();
    nominals.sort();
    let early = digest.iter().filter(|s| s.started < s.nominal).count();
    let gaps = nominals
        .windows(2)
        .filter(|w| w[1].duration_since(w[0]).ok() != Some(every))
        .count();
    let reports = log.get("sales-report").unwrap_or(&empty);
    let triggered = reports.iter().filter(|s| s.triggered).count();
    // The first slot may come up to a period after the start.
    let expected = (seconds / every.as_secs()).saturating_sub(1);
    println!(
        "digest: {} runs (at least {expected} expected), {gaps} gaps or repeats, {early} early; \
         sales-report: {triggered} triggered run",
        digest.len()
    );
    digest.len() as u64 >= expected && gaps == 0 && early == 0 && triggered == 1
}
