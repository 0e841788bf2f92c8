use std::sync::mpsc;
use std::time::{Duration, SystemTime};

use redis::Value;
use wheel_durable::{DurableTimers, Outcome};
use wheel_testkit::{RedisServer, ServerOptions};

use super::*;

fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

/// A `SLOWLOG GET` element for a command with `args`, kept as the log
/// keeps them: at most 32, the last saying how many were left out.
fn logged(id: i64, micros: i64, args: &[String]) -> Value {
    let mut kept: Vec<Value> = args.iter().take(31).map(|a| bulk(a)).collect();
    match args.len() {
        n if n > 32 => kept.push(bulk(&format!("... ({} more arguments)", n - 31))),
        32 => kept.push(bulk(&args[31])),
        _ => {}
    }
    Value::Array(vec![
        Value::Int(id),
        Value::Int(1_700_000_000),
        Value::Int(micros),
        Value::Array(kept),
        bulk(if client_of_script(args) {
            "?:0"
        } else {
            "127.0.0.1:5000"
        }),
        bulk(""),
    ])
}

/// Whether the test gives `args` the address of a script's own calls:
/// when the command is `INNER`.
fn client_of_script(args: &[String]) -> bool {
    args.first().is_some_and(|c| c == "INNER")
}

/// A store call as the store makes it: 21 keys and 3 common arguments
/// before the script's own.
fn store_call(cmd: &str, callee: &str, own: &[&str]) -> Vec<String> {
    let mut a = vec![cmd.to_string(), callee.to_string(), "21".to_string()];
    a.extend((0..21).map(|i| format!("{{ns}}:k{i}")));
    a.extend(["", "2000", "{ns}:wake"].map(String::from));
    a.extend(own.iter().map(|s| s.to_string()));
    a
}

fn entry(id: i64, micros: i64, args: &[String]) -> Entry {
    parse_entry(&logged(id, micros, args)).expect("an entry")
}

/// `n` groups of `group` after `head`.
fn batch(head: &[&'static str], group: &[&'static str], n: usize) -> Vec<&'static str> {
    let mut v = head.to_vec();
    (0..n).for_each(|_| v.extend_from_slice(group));
    v
}

#[test]
fn entries_give_their_time_arguments_and_full_count() {
    let args: Vec<String> = (0..40).map(|i| format!("a{i}")).collect();
    let e = entry(7, 33, &args);
    assert_eq!((e.id, e.micros, e.argc), (7, 33, 40));
    assert_eq!(e.args.len(), 31);
    assert_eq!(e.args[30], "a30");
    let short = entry(8, 2, &["GET".to_string(), "k".to_string()]);
    assert_eq!((short.argc, short.args.len()), (2, 2));
    assert_eq!(parse_entry(&Value::Int(3)), None);
    let negative = Value::Array(vec![Value::Int(-1), Value::Int(0), Value::Int(1)]);
    assert_eq!(parse_entry(&negative), None);
}

#[test]
fn functions_are_named_by_the_suffix_after_the_second_underscore() {
    assert_eq!(script_of_function("wheel_1a2b3c4d_claim"), "claim");
    assert_eq!(
        script_of_function("wheel_1A2B3C4D_dead_letters"),
        "dead_letters"
    );
    assert_eq!(script_of_function("wheel_xyz_claim"), "wheel_xyz_claim");
    assert_eq!(script_of_function("wheel_1a2b3c4d_"), "wheel_1a2b3c4d_");
    assert_eq!(script_of_function("mine"), "mine");
    let own = batch(&["5000"], &["t1", "3", "", ""], 2);
    let e = entry(1, 5, &store_call("FCALL", "wheel_1a2b3c4d_start", &own));
    let (callee, own, n) = call_of(&e);
    assert_eq!(callee, Callee::Function("start".into()));
    assert_eq!((own.len(), n), (4, 9));
    assert_eq!(own[0], "5000");
    let other = entry(2, 1, &["PING".to_string()]);
    assert_eq!(call_of(&other).0, Callee::Command("ping".into()));
}

#[test]
fn evalsha_calls_are_named_by_their_shape() {
    let mut t = Tallies::default();
    let calls: [(&str, Vec<&str>); 9] = [
        (
            "aaaa",
            batch(&["r"], &["t1", "a", "1700000000000", "payload"], 1),
        ),
        (
            "aaaa",
            batch(&["r"], &["t1", "a", "1700000000000", "payload"], 50),
        ),
        (
            "bbbb",
            vec!["2000", "5000", "1000", "0", "10000", "100", "100"],
        ),
        ("cccc", batch(&["5000"], &["t1", "3", "", ""], 1)),
        ("cccc", batch(&["5000"], &["t1", "3", "", ""], 10)),
        (
            "dddd",
            batch(&["0"], &["t1", "3", "done", "0", "", "", "0"], 1),
        ),
        (
            "dddd",
            batch(&["0"], &["t1", "3", "retry", "100", "", "", "0"], 5),
        ),
        ("eeee", vec!["0", "t1"]),
        ("ffff", vec![]),
    ];
    for (i, (sha, own)) in calls.iter().enumerate() {
        t.add(&entry(i as i64 + 1, 10, &store_call("EVALSHA", sha, own)));
    }
    let rows = t.rows();
    let find = |name: &str| rows.iter().find(|r| r.name == name).cloned();
    let add = find("add").expect("add");
    assert_eq!((add.calls, add.micros, add.timers), (2, 20, Some(51)));
    assert_eq!(find("claim").map(|r| r.timers), Some(None));
    assert_eq!(find("start").and_then(|r| r.timers), Some(11));
    assert_eq!(find("finish").and_then(|r| r.timers), Some(6));
    assert_eq!(find("cancel").and_then(|r| r.timers), Some(1));
    assert!(find("evalsha ffff (counts or flows)").is_some(), "{rows:?}");
    assert_eq!(t.missed, 0);
}

#[test]
fn a_sha_settled_elsewhere_is_struck_from_the_others() {
    let mut t = Tallies::default();
    // A renewal of one claim fits renew alone; a start whose step is not
    // empty fits start and renew, so it is the start.
    t.add(&entry(
        1,
        3,
        &store_call("EVALSHA", "r", &["5000", "t1", "7"]),
    ));
    let start = ["5000", "t1", "7", "step", "flow"];
    t.add(&entry(2, 3, &store_call("EVALSHA", "s", &start)));
    let names: Vec<String> = t.rows().into_iter().map(|r| r.name).collect();
    assert_eq!(names.len(), 2);
    assert!(names.contains(&"renew".to_string()) && names.contains(&"start".to_string()));
    let mut alone = Tallies::default();
    alone.add(&entry(1, 3, &store_call("EVALSHA", "s", &start)));
    assert_eq!(alone.rows()[0].name, "evalsha s (start or renew)");
    let odd = ["x", "y", "z", "w", "v", "u"];
    let mut none = Tallies::default();
    none.add(&entry(
        1,
        3,
        &store_call("EVALSHA", "0123456789abcdef", &odd),
    ));
    assert_eq!(none.rows()[0].name, "evalsha 01234567");
}

#[test]
fn gaps_between_ids_count_as_dropped_and_own_commands_are_left_out() {
    let mut t = Tallies::default();
    let cmd = |c: &str| vec![c.to_string(), "x".to_string()];
    t.add(&entry(4, 1, &cmd("SLOWLOG")));
    // 5: a `SLOWLOG GET` the `RESET` erased.
    t.add(&entry(6, 1, &["SLOWLOG".to_string(), "RESET".to_string()]));
    t.add(&entry(7, 4, &cmd("SUBSCRIBE")));
    t.add(&entry(10, 2, &cmd("SUBSCRIBE")));
    t.add(&entry(11, 2, &cmd("INNER")));
    assert_eq!((t.missed, t.inner), (2, 1));
    let rows = t.rows();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].name, "`subscribe` (not a script)");
    assert!(!rows[0].is_script);
    assert_eq!((rows[0].calls, rows[0].micros), (2, 6));
}

#[test]
fn rows_give_the_slowest_call_and_the_99th_percentile() {
    let mut t = Tallies::default();
    let ping = vec!["PING".to_string()];
    // 99 calls of 1..=99 µs and one of 500: the p99 is the 99th call.
    for (id, micros) in (1..=99).chain([500]).enumerate() {
        t.add(&entry(id as i64 + 1, micros, &ping));
    }
    let rows = t.rows();
    assert_eq!((rows[0].calls, rows[0].p99, rows[0].max), (100, 99, 500));
    let mut by = std::collections::BTreeMap::new();
    assert_eq!(quantile(&by, 0, 0.99), 0);
    by.insert(7, 1);
    assert_eq!(quantile(&by, 1, 0.99), 7);
}

/// The store's real calls, through the log of a private server: every
/// script of a fired timer is named, and the settings are put back.
#[test]
fn the_store_scripts_are_named_through_a_real_slow_log() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let url = server.url();
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let log = SlowLog::start(&url).expect("slow log");
    let timers = DurableTimers::builder()
        .redis(&url)
        .namespace("cost")
        .handler(move |_| {
            let _ = tx.lock().map(|t| t.send(()));
            Outcome::Done
        })
        .build()
        .expect("build");
    timers.add_at("t1", SystemTime::now(), b"p").expect("add");
    rx.recv_timeout(Duration::from_secs(10)).expect("fired");
    // The finish follows the handler's return.
    let deadline = SystemTime::now() + Duration::from_secs(10);
    while timers.get("t1").expect("get").is_some() && SystemTime::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    timers.cancel("t2").expect("cancel");
    timers.shutdown().expect("shutdown");
    let tallies = log.finish().expect("finish");
    let names: Vec<String> = tallies.rows().into_iter().map(|r| r.name).collect();
    for script in ["add", "claim", "start", "finish", "cancel"] {
        assert!(names.iter().any(|n| n == script), "{script} in {names:?}");
    }
    // Through `FCALL` get is named by its function; through `EVALSHA`
    // get and ended take the same arguments.
    assert!(
        names
            .iter()
            .any(|n| n == "get" || n.ends_with("(get or ended)")),
        "{names:?}"
    );
    assert!(tallies.inner > 0);
    assert!(!names.iter().any(|n| n.contains("zadd")), "{names:?}");
    assert_eq!(tallies.missed, 0);
    let mut c = redis::Client::open(url.as_str())
        .and_then(|c| c.get_connection())
        .expect("connect");
    assert_eq!(
        config_get(&mut c, "slowlog-log-slower-than").unwrap(),
        "10000"
    );
    assert_eq!(config_get(&mut c, "slowlog-max-len").unwrap(), "128");
}
