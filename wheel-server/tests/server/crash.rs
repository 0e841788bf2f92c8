//! `kill -9` of a server under load loses nothing it answered 201: a
//! client adds timers in a loop, the server is killed mid-load and started
//! again on the same data directory, and every timer answered 201 reaches
//! the receiver. SIGTERM under load answers in full every request it
//! took in, exits cleanly, and keeps every timer it answered 201.

use crate::common;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Receiver, Server, eventually};

use serde_json::json;

#[test]
fn every_timer_answered_201_fires_after_a_sigkill_and_a_restart() {
    let rx = Receiver::start();
    let dir = tempfile::tempdir().unwrap();
    let data = common::data_dir(&dir);
    let s = Server::start_on(&data, &["--allow-private-targets"]);
    let answered = Arc::new(Mutex::new(Vec::<String>::new()));
    let (base, client, url) = (s.base.clone(), s.client.clone(), rx.url("/c"));
    let acked = answered.clone();
    let load = std::thread::spawn(move || {
        let end = Instant::now() + Duration::from_secs(20);
        for i in 0..5_000u32 {
            if Instant::now() > end {
                break;
            }
            let key = format!("k{i}");
            let body = json!({ "key": key, "delay": "1500ms", "callback": { "url": url } });
            let sent = client
                .post(format!("{base}/v1/timers"))
                .bearer_auth(common::TOKEN)
                .json(&body)
                .send();
            match sent {
                Ok(r) if r.status().as_u16() == 201 => acked.lock().unwrap().push(key),
                Ok(r) => panic!("{key}: {}", r.status()),
                Err(_) => break, // the server is gone
            }
        }
    });
    eventually("some load", || answered.lock().unwrap().len() >= 100);
    s.kill();
    load.join().unwrap();
    let answered: Vec<String> = answered.lock().unwrap().clone();
    let again = Server::start_on(&data, &["--allow-private-targets"]);
    let fired = || -> HashSet<String> {
        rx.got()
            .iter()
            .filter_map(|g| g.header("Wheel-Timer-Key").map(str::to_owned))
            .collect()
    };
    let missing = || -> Vec<String> {
        let fired = fired();
        answered
            .iter()
            .filter(|k| !fired.contains(*k))
            .cloned()
            .collect()
    };
    let end = Instant::now() + Duration::from_secs(30);
    while !missing().is_empty() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(100));
    }
    let missing: Vec<String> = missing()
        .iter()
        .map(|k| format!("{k}: {}", again.get(&format!("/v1/timers/{k}")).1))
        .collect();
    if !missing.is_empty() {
        let metrics = again
            .client
            .get(format!("{}/metrics", again.base))
            .send()
            .unwrap()
            .text()
            .unwrap();
        panic!(
            "{} of {} answered 201 never fired: {missing:#?}\n{metrics}",
            missing.len(),
            answered.len()
        );
    }
    assert!(answered.len() >= 100);
}

#[test]
fn sigterm_under_load_answers_what_it_took_and_exits_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let data = common::data_dir(&dir);
    let s = Server::start_on(&data, &["--allow-private-targets"]);
    let answered = Arc::new(Mutex::new(Vec::<String>::new()));
    let (base, client) = (s.base.clone(), s.client.clone());
    let acked = answered.clone();
    let load = std::thread::spawn(move || {
        for i in 0..5_000u32 {
            let key = format!("k{i}");
            let body =
                json!({ "key": key, "delay": "1h", "callback": { "url": "http://127.0.0.1:9/x" } });
            let sent = client
                .post(format!("{base}/v1/timers"))
                .bearer_auth(common::TOKEN)
                .json(&body)
                .send();
            match sent {
                Ok(r) => {
                    // Whatever was taken in is answered in full.
                    assert_eq!(r.status().as_u16(), 201, "{key}");
                    acked.lock().unwrap().push(key);
                }
                Err(_) => break, // no longer accepting
            }
        }
    });
    eventually("some load", || answered.lock().unwrap().len() >= 50);
    assert!(s.terminate().success(), "a clean exit");
    load.join().unwrap();
    let answered = answered.lock().unwrap().clone();
    let again = Server::start_on(&data, &[]);
    let mut stored = HashSet::new();
    let mut path = "/v1/timers?limit=1000".to_owned();
    loop {
        let (_, page) = again.get(&path);
        for t in page["timers"].as_array().unwrap() {
            stored.insert(t["key"].as_str().unwrap().to_owned());
        }
        match page["next_cursor"].as_str() {
            Some(c) => path = format!("/v1/timers?limit=1000&cursor={c}"),
            None => break,
        }
    }
    for key in &answered {
        assert!(
            stored.contains(key.as_str()),
            "{key} was answered 201 but is gone"
        );
    }
}
