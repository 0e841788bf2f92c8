//! The example itself: the receiver, the node processes, the report.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use wheel_durable::http::{HttpCallback, HttpConfig, Method, verify_signature};
use wheel_durable::{DurableError, DurableTimers};
use wheel_testkit::{Received, Receiver, RedisServer, Reply, ServerOptions};

/// The signing secret, in the Standard Webhooks form `whsec_<base64>`.
const SECRET: &str = "whsec_ZGVsYXllZC1jYWxsYmFja3MtZXhhbXBsZS1rZXk=";

struct Args {
    redis: Option<String>,
    /// Start a private `redis-server` (on the PATH) and use it as `--redis`.
    private_redis: bool,
    nodes: usize,
    /// Run as one node process (started by the parent).
    node: bool,
    namespace: String,
    count: u64,
    seconds: u64,
    /// Callbacks due at one instant, to an endpoint slow to answer.
    burst: u64,
}

fn parse() -> Result<Args, lexopt::Error> {
    use lexopt::prelude::*;
    let mut a = Args {
        redis: None,
        private_redis: false,
        nodes: 3,
        node: false,
        namespace: format!("callbacks-{}", std::process::id()),
        count: 300,
        seconds: 10,
        burst: 300,
    };
    let mut p = lexopt::Parser::from_env();
    while let Some(arg) = p.next()? {
        match arg {
            Long("redis") => a.redis = Some(p.value()?.string()?),
            Long("private-redis") => a.private_redis = true,
            Long("nodes") => a.nodes = p.value()?.parse()?,
            Long("node") => a.node = true,
            Long("namespace") => a.namespace = p.value()?.string()?,
            Long("count") => a.count = p.value()?.parse()?,
            Long("seconds") => a.seconds = p.value()?.parse()?,
            Long("burst") => a.burst = p.value()?.parse()?,
            _ => return Err(arg.unexpected()),
        }
    }
    if a.nodes == 0 || a.count == 0 {
        return Err("--nodes and --count must be at least 1".into());
    }
    if a.private_redis && a.redis.is_some() {
        return Err("give --redis URL or --private-redis, not both".into());
    }
    Ok(a)
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The node's HTTP settings: signed requests, short timeouts for loopback.
fn http_config() -> HttpConfig {
    HttpConfig::new()
        .signing_secret(SECRET)
        .timeout(Duration::from_secs(5))
}

pub(crate) fn main() {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("delayed_callbacks: {e}");
            std::process::exit(2);
        }
    };
    let result = if args.node {
        run_node(&args)
    } else {
        run(&args)
    };
    match result {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("delayed_callbacks: {e}");
            std::process::exit(1);
        }
    }
}

/// One node process: fires until its standard input closes.
fn run_node(args: &Args) -> Result<bool, DurableError> {
    let url = args.redis.as_deref().unwrap_or_default();
    let timers = DurableTimers::builder()
        .redis(url)
        .namespace(&args.namespace)
        // A short lease so that a killed node's claims move on quickly.
        .lease(Duration::from_secs(2))
        .http(http_config())
        .build()?;
    println!("ready");
    let _ = std::io::stdout().flush();
    for line in std::io::stdin().lock().lines() {
        if line.is_err() {
            break;
        }
    }
    timers.shutdown()?;
    Ok(true)
}

/// One request as the receiver saw it.
struct Arrival {
    due_ms: u64,
    at_ms: u64,
    signed: bool,
}

type Arrivals = Arc<Mutex<HashMap<String, Vec<Arrival>>>>;

/// How long the burst's endpoint takes to answer.
const SLOW_REPLY: Duration = Duration::from_millis(100);

/// The receiver: answers 200 to every request (the burst's after
/// [`SLOW_REPLY`]), checks its signature, and prints its lateness (not for
/// the burst: a few hundred lines at once would say nothing the summary
/// does not). It is the test kit's loopback HTTP/1.1 receiver, which holds
/// as many requests at once as the node sends; it stops when dropped.
fn start_receiver() -> (Receiver, Arrivals) {
    let arrivals: Arrivals = Arc::default();
    let log = arrivals.clone();
    let receiver = Receiver::start(move |r, _| {
        let burst = receive(r, &log);
        if burst {
            Reply::status(200).after(SLOW_REPLY)
        } else {
            Reply::status(200)
        }
    });
    (receiver, arrivals)
}

/// Logs one request; true if it is one of the burst's.
fn receive(r: &Received, log: &Arrivals) -> bool {
    let header = |name: &str| r.header(name).unwrap_or_default().trim().to_owned();
    let at_ms = unix_ms(r.at);
    let (key, attempt) = (header("wheel-timer-key"), header("wheel-attempt"));
    let webhook = ["webhook-id", "webhook-timestamp", "webhook-signature"].map(header);
    let due_ms: u64 = header("wheel-due").parse().unwrap_or(0);
    let signed = verify(&webhook, &r.body);
    let late = at_ms.saturating_sub(due_ms);
    let burst = key.starts_with("burst:");
    if !burst {
        println!("{key:<14} late {late:>5} ms  attempt {attempt}  signature {signed}");
    }
    let arrival = Arrival {
        due_ms,
        at_ms,
        signed,
    };
    log.lock().unwrap().entry(key).or_default().push(arrival);
    burst
}

/// Checks the Standard Webhooks signature (`webhook-id`,
/// `webhook-timestamp`, `webhook-signature`) against the body as a
/// receiver does: an HMAC must match, and the timestamp be within five
/// minutes of now.
fn verify([id, timestamp, signature]: &[String; 3], body: &[u8]) -> bool {
    verify_signature(SECRET, id, timestamp, signature, body, SystemTime::now()).is_ok()
}

/// The callbacks to schedule: (key, offset from now, request, paid).
/// The burst's are all due a quarter of the way through the span.
fn workload(receiver: &Receiver, args: &Args) -> Vec<(String, Duration, HttpCallback, bool)> {
    let (count, seconds) = (args.count, args.seconds);
    let base = receiver.url("");
    let span_ms = seconds * 1000;
    let burst_at = Duration::from_millis(1_000 + span_ms / 4);
    let burst = (0..args.burst).map(|i| {
        let cb = HttpCallback::new(Method::Post, format!("{base}/slow/{i}"))
            .body(format!(r#"{{"export":{i}}}"#).into());
        (format!("burst:{i}"), burst_at, cb, false)
    });
    (0..count)
        .map(|i| {
            // Scatters due times over the span in a fixed order (7919 is
            // prime: a permutation of the slots for any count below it).
            let slot = (i * 7_919) % count;
            let offset = Duration::from_millis(1_000 + slot * span_ms / count);
            if i % 3 == 2 {
                let cb = HttpCallback::new(Method::Post, format!("{base}/reminders/{i}"))
                    .header("Content-Type", "application/json")
                    .body(format!(r#"{{"user":{i},"text":"your cart is waiting"}}"#).into());
                (format!("reminder:{i}"), offset, cb, false)
            } else {
                let cb = HttpCallback::new(Method::Post, format!("{base}/orders/{i}/close"))
                    .header("Content-Type", "application/json")
                    .body(format!(r#"{{"order":{i},"reason":"unpaid"}}"#).into());
                (format!("order:{i}"), offset, cb, i % 10 == 0)
            }
        })
        .chain(burst)
        .collect()
}

/// The parent: receiver, nodes, callbacks, and (on Redis) one kill.
fn run(args: &Args) -> Result<bool, DurableError> {
    let (receiver, arrivals) = start_receiver();
    let dir = tempfile::tempdir().map_err(|e| DurableError::Io(e.into()))?;
    let mut children = Vec::new();
    // Dropped (and so stopped) when `run` returns, after the nodes.
    let server = if args.private_redis {
        let started = RedisServer::start(ServerOptions::default());
        Some(started.map_err(|e| DurableError::Unavailable(format!("redis-server: {e}").into()))?)
    } else {
        None
    };
    let url = server.as_ref().map(RedisServer::url).or(args.redis.clone());
    let timers = match &url {
        None => DurableTimers::builder()
            .embedded(dir.path().join("callbacks"))
            .http(http_config())
            .build()?,
        Some(url) => {
            for _ in 0..args.nodes {
                children.push(spawn_node(url, &args.namespace)?);
            }
            println!("{} node processes on {url}", children.len());
            DurableTimers::builder()
                .redis(url)
                .namespace(&args.namespace)
                .build()?
        }
    };
    let work = workload(&receiver, args);
    let start = SystemTime::now();
    let is_burst = |key: &str| key.starts_with("burst:");
    for (key, offset, cb, _) in work.iter().filter(|w| !is_burst(&w.0)) {
        timers.add_callback_at(key, start + *offset, cb)?;
    }
    let mut paid = 0;
    for (key, _, _, is_paid) in &work {
        if *is_paid && timers.cancel(key)? {
            paid += 1;
        }
    }
    // After the cancels, so that they come before the first due time.
    for (key, offset, cb, _) in work.iter().filter(|w| is_burst(&w.0)) {
        timers.add_callback_at(key, start + *offset, cb)?;
    }
    println!(
        "scheduled {} callbacks over {} s, {} of them due at one instant to an \
         endpoint that answers in {} ms; {paid} orders paid, their callbacks cancelled",
        work.len(),
        args.seconds,
        args.burst,
        SLOW_REPLY.as_millis()
    );
    let expected: Vec<&str> = work.iter().filter(|w| !w.3).map(|w| w.0.as_str()).collect();
    let killed_at = wait_and_kill(args, &mut children, &arrivals, &expected, start);
    let ok = summary(&arrivals, &expected, killed_at);
    for mut c in children {
        drop(c.stdin.take()); // closing stdin stops a node cleanly
        let _ = c.wait();
    }
    timers.shutdown()?;
    Ok(ok)
}

fn spawn_node(url: &str, namespace: &str) -> Result<Child, DurableError> {
    let io = |e: std::io::Error| DurableError::Io(e.into());
    let exe = std::env::current_exe().map_err(io)?;
    let mut child = Command::new(exe)
        .args(["--node", "--redis", url, "--namespace", namespace])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(io)?;
    let mut line = String::new();
    let stdout = child.stdout.take().expect("piped");
    BufReader::new(stdout).read_line(&mut line).map_err(io)?;
    if line.trim() != "ready" {
        return Err(DurableError::Config(format!(
            "a node did not start: {line:?}"
        )));
    }
    Ok(child)
}

/// Waits until every expected callback arrived (or a generous deadline),
/// killing the first node halfway through the schedule when there are
/// node processes. Returns when the kill happened, in Unix ms.
fn wait_and_kill(
    args: &Args,
    children: &mut [Child],
    arrivals: &Arrivals,
    expected: &[&str],
    start: SystemTime,
) -> Option<u64> {
    let begun = Instant::now();
    let halfway = Duration::from_millis(1_000 + args.seconds * 500);
    let deadline = Duration::from_secs(args.seconds + 30);
    let mut killed_at = None;
    loop {
        let all = {
            let got = arrivals.lock().unwrap();
            expected.iter().all(|k| got.contains_key(*k))
        };
        if all || begun.elapsed() > deadline {
            return killed_at;
        }
        if killed_at.is_none()
            && !children.is_empty()
            && start.elapsed().unwrap_or_default() >= halfway
        {
            let victim = &mut children[0];
            let _ = victim.kill(); // SIGKILL: no shutdown, claims left held
            let _ = victim.wait();
            println!("--- killed node 0 (pid {}) with SIGKILL ---", victim.id());
            killed_at = Some(unix_ms(SystemTime::now()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Prints the summary; true when every expected callback arrived, none
/// before its due time, no cancelled one did, and every signature checked
/// out.
fn summary(arrivals: &Arrivals, expected: &[&str], killed_at: Option<u64>) -> bool {
    let got = arrivals.lock().unwrap();
    let missing = expected.iter().filter(|k| !got.contains_key(**k)).count();
    let unexpected = got
        .keys()
        .filter(|k| !expected.contains(&k.as_str()))
        .count();
    let requests: usize = got.values().map(Vec::len).sum();
    let twice = got.values().filter(|v| v.len() > 1).count();
    let bad_sig = got.values().flatten().filter(|a| !a.signed).count();
    let early = got
        .values()
        .flatten()
        .filter(|a| a.at_ms < a.due_ms)
        .count();
    // The burst has a line of its own.
    let mut late: Vec<u64> = got
        .iter()
        .filter(|(k, _)| !k.starts_with("burst:"))
        .filter_map(|(_, v)| v.first())
        .map(|a| a.at_ms.saturating_sub(a.due_ms))
        .collect();
    late.sort_unstable();
    let pct = |q: f64| late.get(((late.len() as f64 * q).ceil() as usize).saturating_sub(1));
    println!("\n=== summary ===");
    println!(
        "callbacks expected {}, arrived {}, missing {missing}",
        expected.len(),
        got.len()
    );
    println!(
        "requests {requests} (keys sent more than once: {twice}), cancelled that arrived: {unexpected}"
    );
    println!("signatures failing: {bad_sig}, requests before their due time: {early}");
    if let (Some(p50), Some(p99), Some(max)) = (pct(0.5), pct(0.99), late.last()) {
        println!("lateness of first arrivals: p50 {p50} ms, p99 {p99} ms, max {max} ms");
    }
    burst_report(&got);
    if killed_at.is_some() {
        let taken_over = late.iter().filter(|l| **l > 1_000).count();
        println!(
            "one node killed: {taken_over} callbacks arrived over 1 s late \
             (its claims, taken over by the others when their lease ended)"
        );
    }
    missing == 0 && unexpected == 0 && bad_sig == 0 && early == 0
}

/// How long the burst took: from its due time to its last first arrival.
fn burst_report(got: &HashMap<String, Vec<Arrival>>) {
    let firsts: Vec<&Arrival> = got
        .iter()
        .filter(|(k, _)| k.starts_with("burst:"))
        .filter_map(|(_, v)| v.first())
        .collect();
    let (Some(due), Some(last)) = (
        firsts.iter().map(|a| a.due_ms).min(),
        firsts.iter().map(|a| a.at_ms).max(),
    ) else {
        return;
    };
    println!(
        "burst: {} callbacks due at once, the last arrived {} ms after their due time",
        firsts.len(),
        last.saturating_sub(due)
    );
}
