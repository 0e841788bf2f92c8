//! Flow limits through the API and the command line: set, read back and
//! removed, for a key and as the defaults; bad limits are problem
//! documents naming the field; the startup flags set them at every
//! start; a parallelism shows its runs in flight and its waiting timers;
//! `/metrics` shows at most `--metrics-flow-keys` keys, the rest summed.

use crate::common;

use common::{Receiver, Server, assert_problem, eventually};
use reqwest::Method;
use serde_json::{Value, json};

const KEY: &str = "https://api.example.com:8443";

fn put(s: &Server, body: Value) -> (u16, Value) {
    s.send(Method::PUT, "/v1/flows:limits", Some(body))
}

/// The entry of `key` in `GET /v1/flows`, if listed.
fn entry(s: &Server, key: &str) -> Option<Value> {
    let (status, flows) = s.get("/v1/flows");
    assert_eq!(status, 200, "{flows}");
    flows["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["key"] == key)
        .cloned()
}

#[test]
fn limits_of_a_key_and_the_defaults_are_set_read_back_and_removed() {
    let s = Server::start(&[]);
    let limits = json!({
        "rate": { "count": 500, "period_ms": 1000, "burst": 10 },
        "parallelism": 20,
        "breaker": { "failures": 3, "pause_after_ms": 60000 },
    });
    let kept = json!({
        "rate": { "count": 500, "period_ms": 1000, "burst": 10 },
        "parallelism": 20,
        "breaker": { "failures": 3, "cooldown_ms": 5000, "max_cooldown_ms": 300000, "pause_after_ms": 60000 },
    });
    let set = put(&s, json!({ "flow": KEY, "limits": limits }));
    assert_eq!(set, (200, json!({ "flow": KEY, "limits": kept })));
    assert_eq!(
        entry(&s, KEY).unwrap(),
        json!({
            "key": KEY, "paused": false, "parked": 0, "limits": kept,
            "in_flight": 0, "waiting": 0, "lateness_p50_ms": null, "lateness_p99_ms": null,
            "breaker": { "state": "closed", "failures": 0, "next_probe": null },
        })
    );
    // The defaults: a key without limits of its own is not listed.
    let defaults = json!({ "parallelism": 50, "breaker": {} });
    let set = put(&s, json!({ "all": true, "limits": defaults }));
    let kept_defaults = json!({
        "rate": null, "parallelism": 50,
        "breaker": { "failures": 5, "cooldown_ms": 5000, "max_cooldown_ms": 300000, "pause_after_ms": null },
    });
    assert_eq!(set, (200, json!({ "all": true, "limits": kept_defaults })));
    assert_eq!(s.get("/v1/flows").1["defaults"], kept_defaults);
    // Removed: the key leaves the listing, the defaults stay.
    let removed = s.post("/v1/flows:unlimit", json!({ "flow": KEY }));
    assert_eq!(removed, (200, json!({ "flow": KEY, "limits": null })));
    assert_eq!(entry(&s, KEY), None);
    assert_eq!(s.get("/v1/flows").1["defaults"], kept_defaults);
    // `{}` for a key: none of its own, so not even the defaults.
    let none = json!({ "rate": null, "parallelism": null, "breaker": null });
    assert_eq!(
        put(&s, json!({ "flow": "reports", "limits": {} })),
        (200, json!({ "flow": "reports", "limits": none }))
    );
    assert_eq!(entry(&s, "reports").unwrap()["limits"], none);
    // `{}` for the defaults clears them; so does unlimit with all.
    assert_eq!(
        put(&s, json!({ "all": true, "limits": {} })),
        (200, json!({ "all": true, "limits": null }))
    );
    assert_eq!(s.get("/v1/flows").1["defaults"], Value::Null);
    put(&s, json!({ "all": true, "limits": { "parallelism": 2 } }));
    assert_eq!(
        s.post("/v1/flows:unlimit", json!({ "all": true })),
        (200, json!({ "all": true, "limits": null }))
    );
    assert_eq!(s.get("/v1/flows").1["defaults"], Value::Null);
}

#[test]
fn bad_limits_are_problem_documents_naming_the_field() {
    let s = Server::start(&[]);
    let week = 7 * 24 * 3600 * 1000_u64;
    for (limits, field) in [
        (
            json!({ "rate": { "count": 0, "period_ms": 1000 } }),
            "limits.rate.count",
        ),
        (
            json!({ "rate": { "count": 1_000_001, "period_ms": 1000 } }),
            "limits.rate.count",
        ),
        (
            json!({ "rate": { "count": -1, "period_ms": 1000 } }),
            "limits.rate.count",
        ),
        (
            json!({ "rate": { "count": 5, "period_ms": 0 } }),
            "limits.rate.period_ms",
        ),
        (
            json!({ "rate": { "count": 5, "period_ms": week + 1 } }),
            "limits.rate.period_ms",
        ),
        (
            json!({ "rate": { "count": 5, "period_ms": 1000, "burst": 6 } }),
            "limits.rate.burst",
        ),
        (
            json!({ "rate": { "period_ms": 1000 } }),
            "limits.rate.count",
        ),
        (json!({ "parallelism": 0 }), "limits.parallelism"),
        (json!({ "parallelism": "many" }), "limits.parallelism"),
        (
            json!({ "breaker": { "failures": 0 } }),
            "limits.breaker.failures",
        ),
        (
            json!({ "breaker": { "cooldown_ms": 0 } }),
            "limits.breaker.cooldown_ms",
        ),
        (
            json!({ "breaker": { "cooldown_ms": 10_000, "max_cooldown_ms": 5000 } }),
            "limits.breaker.max_cooldown_ms",
        ),
        (
            json!({ "breaker": { "pause_after_ms": week + 1 } }),
            "limits.breaker.pause_after_ms",
        ),
        (
            json!({ "breaker": { "open": true } }),
            "limits.breaker.open",
        ),
        (json!({ "speed": 3 }), "limits.speed"),
    ] {
        let got = put(&s, json!({ "flow": KEY, "limits": limits.clone() }));
        assert_problem(&got, 422, Some(field));
        let got = put(&s, json!({ "all": true, "limits": limits }));
        assert_problem(&got, 422, Some(field));
    }
    for (body, field) in [
        (json!({ "flow": KEY }), "limits"),
        (json!({ "limits": {} }), "flow"),
        (json!({ "flow": KEY, "all": true, "limits": {} }), "all"),
        (json!({ "all": false, "limits": {} }), "all"),
        (json!({ "flow": "", "limits": {} }), "flow"),
        (json!({ "flow": "a\nb", "limits": {} }), "flow"),
        (json!({ "flow": "x".repeat(513), "limits": {} }), "flow"),
    ] {
        assert_problem(&put(&s, body), 422, Some(field));
    }
    for (body, field) in [
        (json!({}), "flow"),
        (json!({ "flow": "" }), "flow"),
        (json!({ "all": false }), "all"),
        (json!({ "flow": KEY, "limits": {} }), "limits"),
    ] {
        assert_problem(&s.post("/v1/flows:unlimit", body), 422, Some(field));
    }
    // Nothing was set by any of them.
    let flows = s.get("/v1/flows").1;
    assert_eq!(
        flows,
        json!({ "paused": false, "defaults": null, "flows": [] })
    );
}

#[test]
fn startup_flags_set_limits_at_every_start_and_bad_ones_stop_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let flags = [
        "--flow-limits",
        "https://a.example=rate=500/1s,parallelism=20,breaker",
        "--flow-limits",
        "reports=breaker.failures=2",
        "--flow-defaults",
        "parallelism=50",
    ];
    let s = Server::start_on(&data, &flags);
    let a = entry(&s, "https://a.example").unwrap();
    assert_eq!(
        a["limits"]["rate"],
        json!({ "count": 500, "period_ms": 1000, "burst": 1 })
    );
    assert_eq!(a["limits"]["parallelism"], 20);
    assert_eq!(a["limits"]["breaker"]["failures"], 5);
    assert_eq!(
        entry(&s, "reports").unwrap()["limits"]["breaker"]["failures"],
        2
    );
    assert_eq!(s.get("/v1/flows").1["defaults"]["parallelism"], 50);
    // What the API sets for a key the flags name lasts until the next
    // start; a key they do not name keeps its limits.
    put(
        &s,
        json!({ "flow": "https://a.example", "limits": { "parallelism": 3 } }),
    );
    put(
        &s,
        json!({ "flow": "api-only", "limits": { "parallelism": 4 } }),
    );
    s.terminate();
    let s = Server::start_on(&data, &flags);
    assert_eq!(
        entry(&s, "https://a.example").unwrap()["limits"]["parallelism"],
        20
    );
    assert_eq!(entry(&s, "api-only").unwrap()["limits"]["parallelism"], 4);
    drop(s);
    for (flag, bad, says) in [
        (
            "--flow-limits",
            "k=parallelism=0",
            "a parallelism must be 1 to",
        ),
        ("--flow-limits", "k=rate=5/1s,burst=9", "rate.burst"),
        ("--flow-limits", "a\u{1}b=parallelism=2", "control"),
        ("--flow-defaults", "speed=3", "not one of"),
    ] {
        let mut args: Vec<String> = [
            "--data",
            &data.display().to_string(),
            "--listen",
            "127.0.0.1:0",
        ]
        .map(str::to_owned)
        .to_vec();
        args.extend([flag.to_owned(), bad.to_owned()]);
        let err = common::spawn(&args).expect_err("refused to start");
        assert!(err.contains(says), "{flag} {bad:?}: {err}");
    }
}

#[test]
fn a_parallelism_shows_its_runs_in_flight_and_its_waiting_timers() {
    let rx = Receiver::start();
    let s = Server::start(&["--allow-private-targets"]);
    let flow = json!({ "flow": "slow-target", "limits": { "parallelism": 1 } });
    assert_eq!(put(&s, flow).0, 200);
    for key in ["one", "two"] {
        let timer = json!({
            "key": key, "delay": 0,
            "callback": { "url": rx.url(&format!("/slow-{key}")), "flow": "slow-target" },
        });
        assert_eq!(s.post("/v1/timers", timer).0, 201);
    }
    // One runs (its target answers after 3 s), the other waits for it.
    eventually("one in flight and one waiting", || {
        entry(&s, "slow-target").is_some_and(|k| k["in_flight"] == 1 && k["waiting"] == 1)
    });
    eventually("both sent", || rx.got().len() == 2);
    eventually("both done, with their lateness", || {
        entry(&s, "slow-target").is_some_and(|k| {
            k["in_flight"] == 0 && k["waiting"] == 0 && k["lateness_p99_ms"].as_f64().is_some()
        })
    });
}

#[test]
fn metrics_show_at_most_the_bound_of_flow_keys_and_sum_the_rest() {
    let s = Server::start(&["--metrics-flow-keys", "2"]);
    for key in ["a", "b", "c", "other", "q\"uote"] {
        assert_eq!(s.post("/v1/flows:pause", json!({ "flow": key })).0, 200);
    }
    let text = s.metrics();
    let series: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("wheel_flow_paused{"))
        .collect();
    // The first two in byte order (no timers anywhere), then the other
    // three summed, `other` itself with them.
    assert_eq!(
        series,
        [
            "wheel_flow_paused{flow=\"a\"} 1",
            "wheel_flow_paused{flow=\"b\"} 1",
            "wheel_flow_paused{flow=\"other\"} 3",
        ],
        "{text}"
    );
    assert!(text.contains("\nwheel_flow_other_keys 3\n"), "{text}");
    assert!(text.contains("\nwheel_flows_all_paused 0\n"), "{text}");
    assert!(
        text.contains("\nwheel_flow_breaker{flow=\"a\",state=\"closed\"} 1\n"),
        "{text}"
    );
    let s = Server::start(&[]);
    s.post("/v1/flows:pause", json!({ "flow": "q\"uote\\" }));
    let text = s.metrics();
    assert!(
        text.contains("\nwheel_flow_paused{flow=\"q\\\"uote\\\\\"} 1\n"),
        "{text}"
    );
}

#[test]
fn the_dashboard_sets_and_removes_a_key_s_limits() {
    let Some(b) = crate::browser::Browser::for_test() else {
        return;
    };
    let s = Server::start(&[]);
    put(&s, json!({ "all": true, "limits": { "parallelism": 50 } }));
    b.goto(&format!("{}/", s.base));
    b.type_into(&b.find("#token"), common::TOKEN);
    b.click(&b.find("#token-save"));
    eventually("the defaults shown", || {
        b.text(&b.find("#flows-defaults")).contains("50 at once")
    });
    // The key is markup: the page shows it as text, never as elements.
    let key = "<b>api</b>";
    b.type_into(&b.find("#limits-key"), key);
    b.type_into(&b.find("#limits-rate"), "5");
    b.type_into(&b.find("#limits-parallelism"), "2");
    b.click(&b.find("#limits-breaker"));
    b.click(&b.find("#limits-set"));
    eventually("the limits set", || {
        entry(&s, key).is_some_and(|k| {
            k["limits"]["rate"] == json!({ "count": 5, "period_ms": 1000, "burst": 1 })
                && k["limits"]["parallelism"] == 2
                && k["limits"]["breaker"]["failures"] == 5
        })
    });
    let shown = |what: &str| {
        let tr = crate::dashboard::row(&b, "flows-rows", key)?;
        Some(b.text(&b.find_in(&tr, what)))
    };
    eventually("the row with its limits", || {
        shown("td.limits").as_deref() == Some("5 / 1 s, 2 at once, breaker after 5 failures")
    });
    assert_eq!(shown("td.breaker").as_deref(), Some("closed"));
    assert_eq!(shown("td.in-flight").as_deref(), Some("0"));
    assert_eq!(
        b.script(
            "return document.querySelectorAll('#flows b').length",
            json!([])
        ),
        0,
        "markup from the API became elements"
    );
    b.click(&b.find("#limits-remove"));
    eventually("the limits removed", || entry(&s, key).is_none());
    eventually("the row gone", || {
        crate::dashboard::row(&b, "flows-rows", key).is_none()
    });
    // A refusal is shown, and sets nothing.
    b.script(
        "document.getElementById('limits-parallelism').value = '0'",
        json!([]),
    );
    b.click(&b.find("#limits-set"));
    eventually("the refusal shown", || {
        b.text(&b.find("#limits-error"))
            .contains("a parallelism must be 1 to")
    });
    assert_eq!(entry(&s, key), None);
}
