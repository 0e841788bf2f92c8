//! Schedules over HTTP against the built binary: create or update by id,
//! read, list, delete, pause, resume and trigger; a schedule's runs listed
//! through `/v1/timers?schedule=ID`; the runs' callbacks with their
//! schedule headers; problem documents for bad definitions; the metrics.

use crate::common;

use common::{Receiver, Server, assert_problem, eventually};
use reqwest::Method;
use serde_json::{Value, json};

fn hourly(url: &str) -> Value {
    json!({ "every": "1h", "callback": { "url": url } })
}

/// Hourly from 2099: no run of its chain comes due during a test, so
/// every run a test sees is one it triggered.
fn hourly_later(url: &str) -> Value {
    json!({ "every": "1h", "start": "2099-01-01T00:00:00Z", "callback": { "url": url } })
}

fn header<'a>(got: &'a common::Got, name: &str) -> Option<&'a str> {
    got.headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

#[test]
fn schedules_are_created_updated_read_listed_and_deleted() {
    let s = Server::start(&["--allow-private-targets"]);
    let body = hourly("http://127.0.0.1:9/report");
    let (status, created) = s.send(
        Method::PUT,
        "/v1/schedules/report:daily",
        Some(body.clone()),
    );
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["result"], "created");
    assert_eq!(created["every"], 3_600_000);
    assert_eq!(created["catch_up"]["policy"], "latest");
    assert_eq!(created["overlap"], "skip");
    assert_eq!(created["callback"]["url"], "http://127.0.0.1:9/report");
    assert!(created["next_run_at"].is_string() && created["last_run"].is_null());

    let (status, same) = s.send(Method::PUT, "/v1/schedules/report:daily", Some(body));
    assert_eq!(
        (status, &same["result"]),
        (200, &json!("unchanged")),
        "{same}"
    );
    let cron = json!({ "cron": "0 30 2 * * *", "zone": "America/New_York",
        "callback": { "url": "http://127.0.0.1:9/report" } });
    let (status, updated) = s.send(Method::PUT, "/v1/schedules/report:daily", Some(cron));
    assert_eq!(
        (status, &updated["result"]),
        (200, &json!("updated")),
        "{updated}"
    );
    assert_eq!(updated["zone"], "America/New_York");
    assert!(updated["every"].is_null());

    let (status, got) = s.get("/v1/schedules/report:daily");
    assert_eq!(status, 200);
    assert_eq!(got["cron"], "0 30 2 * * *");
    assert!(
        got.get("result").is_none(),
        "only a PUT answer says what it did"
    );

    for id in ["b", "c"] {
        let (status, _) = s.send(
            Method::PUT,
            &format!("/v1/schedules/{id}"),
            Some(hourly("http://127.0.0.1:9/x")),
        );
        assert_eq!(status, 201);
    }
    let (status, page) = s.get("/v1/schedules?limit=2");
    assert_eq!(status, 200, "{page}");
    let ids: Vec<&str> = page["schedules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["b", "c"]);
    let cursor = page["next_cursor"].as_str().unwrap().to_owned();
    let (_, rest) = s.get(&format!("/v1/schedules?limit=2&cursor={cursor}"));
    assert_eq!(rest["schedules"][0]["id"], "report:daily");
    assert!(rest["next_cursor"].is_null());

    assert_eq!(s.send(Method::DELETE, "/v1/schedules/b", None).0, 204);
    assert_problem(
        &s.send(Method::DELETE, "/v1/schedules/b", None),
        404,
        Some("id"),
    );
    assert_problem(&s.get("/v1/schedules/b"), 404, Some("id"));
}

#[test]
fn runs_call_back_with_the_schedule_headers_and_are_listed_by_schedule() {
    let rx = Receiver::start();
    let s = Server::start(&["--allow-private-targets"]);
    let every_second = json!({ "every": "1s", "callback": { "url": rx.url("/tick") } });
    assert_eq!(
        s.send(Method::PUT, "/v1/schedules/tick", Some(every_second))
            .0,
        201
    );
    assert_eq!(
        s.send(
            Method::PUT,
            "/v1/schedules/other",
            Some(hourly(&rx.url("/other")))
        )
        .0,
        201
    );
    eventually("two runs of tick", || {
        rx.got().iter().filter(|g| g.path == "/tick").count() >= 2
    });
    let got = rx.got();
    let runs: Vec<_> = got.iter().filter(|g| g.path == "/tick").collect();
    assert_eq!(header(runs[0], "wheel-schedule-id"), Some("tick"));
    let t0: u64 = header(runs[0], "wheel-schedule-time")
        .unwrap()
        .parse()
        .unwrap();
    let t1: u64 = header(runs[1], "wheel-schedule-time")
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(t1 - t0, 1_000, "one run per second, none twice");

    // The pending runs of `tick` only: its next run, not `other`'s.
    let (status, page) = s.get("/v1/timers?schedule=tick&limit=1000");
    assert_eq!(status, 200, "{page}");
    let keys: Vec<&str> = page["timers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["key"].as_str().unwrap())
        .collect();
    assert!(!keys.is_empty(), "{page}");
    assert!(
        keys.iter().all(|k| k.starts_with("sched:tick:")),
        "{keys:?}"
    );
    let (_, other) = s.get("/v1/timers?schedule=other");
    assert_eq!(other["timers"].as_array().unwrap().len(), 1, "{other}");
    assert_problem(&s.get("/v1/timers?schedule="), 400, Some("schedule"));

    eventually("the last run done", || {
        s.get("/v1/schedules/tick").1["last_run"]["outcome"] == "done"
    });
}

#[test]
fn pause_resume_and_trigger() {
    let rx = Receiver::start();
    let s = Server::start(&["--allow-private-targets"]);
    assert_eq!(
        s.send(
            Method::PUT,
            "/v1/schedules/job",
            Some(hourly_later(&rx.url("/job")))
        )
        .0,
        201
    );
    let (status, paused) = s.send(Method::POST, "/v1/schedules/job:pause", None);
    assert_eq!(status, 200, "{paused}");
    assert_eq!(paused["paused"], true);
    assert!(paused["next_run_at"].is_null());
    // Pausing again changes nothing and says so by the state.
    assert_eq!(
        s.send(Method::POST, "/v1/schedules/job:pause", None).1["paused"],
        true
    );

    // A trigger runs even while paused.
    let (status, t) = s.send(Method::POST, "/v1/schedules/job:trigger", None);
    assert_eq!(status, 201, "{t}");
    let key = t["key"].as_str().unwrap().to_owned();
    assert!(key.starts_with("sched-trigger:job:"), "{key}");
    eventually("the triggered run", || {
        rx.got().iter().any(|g| g.path == "/job")
    });
    eventually("its outcome", || {
        let (_, job) = s.get("/v1/schedules/job");
        job["last_run"]["outcome"] == "done" && job["last_run"]["key"] == key.as_str()
    });

    let (status, resumed) = s.send(Method::POST, "/v1/schedules/job:resume", None);
    assert_eq!(status, 200, "{resumed}");
    assert_eq!(resumed["paused"], false);
    assert!(resumed["next_run_at"].is_string());

    for action in ["pause", "resume", "trigger"] {
        assert_problem(
            &s.send(
                Method::POST,
                &format!("/v1/schedules/nobody:{action}"),
                None,
            ),
            404,
            Some("id"),
        );
    }
    // POST names an action; a schedule is created with PUT. An action
    // path takes POST only. Each 405 says what the path takes.
    assert_problem(&s.send(Method::POST, "/v1/schedules/job", None), 405, None);
    let allow = |method: Method, path: &str| {
        let r = s.req(method, path).send().unwrap();
        assert_eq!(r.status(), 405);
        r.headers()["allow"].to_str().unwrap().to_owned()
    };
    assert_eq!(allow(Method::POST, "/v1/schedules/job"), "GET, PUT, DELETE");
    assert_eq!(
        allow(Method::OPTIONS, "/v1/schedules/job"),
        "GET, PUT, DELETE"
    );
    assert_eq!(allow(Method::GET, "/v1/schedules/job:pause"), "POST");
    assert_eq!(allow(Method::PUT, "/v1/schedules/job:pause"), "POST");
    assert_eq!(allow(Method::OPTIONS, "/v1/schedules/job:trigger"), "POST");
}

#[test]
fn bad_definitions_get_problem_documents_naming_the_field() {
    let s = Server::start(&["--allow-private-targets"]);
    let cb = json!({ "url": "http://127.0.0.1:9/x" });
    let put = |body: Value| s.send(Method::PUT, "/v1/schedules/bad", Some(body));
    let bad_cron = put(json!({ "cron": "0 9 32 * *", "callback": cb }));
    assert_problem(&bad_cron, 422, Some("cron"));
    let detail = bad_cron.1["detail"].as_str().unwrap();
    assert!(
        detail.contains("day-of-month field `32` at column 5"),
        "{detail}"
    );
    assert_problem(
        &put(json!({ "cron": "0 9 * * *", "zone": "Mars/Olympus", "callback": cb })),
        422,
        Some("zone"),
    );
    assert_problem(
        &put(json!({ "every": "1m", "start": "2030-01-02T00:00:00Z",
            "end": "2030-01-01T00:00:00Z", "callback": cb })),
        422,
        Some("end"),
    );
    assert_problem(
        &put(json!({ "every": "1m", "run_limit": 0, "callback": cb })),
        422,
        Some("run_limit"),
    );
    assert_problem(&put(json!({ "every": "1m" })), 422, Some("callback"));
    assert_problem(
        &put(json!({ "every": "1m", "payload": "x", "callback": cb })),
        422,
        Some("payload"),
    );
    let long = "i".repeat(513);
    assert_problem(
        &s.send(
            Method::PUT,
            &format!("/v1/schedules/{long}"),
            Some(json!({ "every": "1m", "callback": cb })),
        ),
        422,
        Some("id"),
    );
    assert_problem(&s.get("/v1/schedules?limit=0"), 400, Some("limit"));
    assert_eq!(s.get("/v1/schedules/bad").0, 404, "nothing was stored");
}

#[test]
fn metrics_count_schedules_and_their_runs() {
    let rx = Receiver::start();
    let s = Server::start(&["--allow-private-targets"]);
    for id in ["m1", "m2"] {
        assert_eq!(
            s.send(
                Method::PUT,
                &format!("/v1/schedules/{id}"),
                Some(hourly_later(&rx.url("/m")))
            )
            .0,
            201
        );
    }
    assert_eq!(s.send(Method::POST, "/v1/schedules/m2:pause", None).0, 200);
    assert_eq!(
        s.send(Method::POST, "/v1/schedules/m1:trigger", None).0,
        201
    );
    eventually("the schedule counts", || {
        let text = s.metrics();
        [
            "wheel_schedules 2",
            "wheel_schedules_paused 1",
            "wheel_schedule_runs_total 1",
        ]
        .iter()
        .all(|line| text.lines().any(|l| l == *line))
    });
    let text = s.metrics();
    for reason in ["catch_up", "overlap", "paused"] {
        let prefix = format!("wheel_schedule_runs_skipped{{reason=\"{reason}\"}} ");
        assert!(text.lines().any(|l| l.starts_with(&prefix)), "{text}");
    }
}

#[test]
fn a_run_that_gave_up_is_the_last_run_failed_and_a_dead_letter() {
    let rx = Receiver::start();
    let s = Server::start(&["--allow-private-targets"]);
    // The receiver answers 400 on `/fail`: a refusal, so the run gives up.
    assert_eq!(
        s.send(
            Method::PUT,
            "/v1/schedules/f",
            Some(hourly_later(&rx.url("/fail")))
        )
        .0,
        201
    );
    let (_, t) = s.send(Method::POST, "/v1/schedules/f:trigger", None);
    let key = t["key"].as_str().unwrap().to_owned();
    eventually("the run to fail", || {
        s.get("/v1/schedules/f").1["last_run"]["outcome"] == "failed"
    });
    let (_, dead) = s.get("/v1/dead-letters");
    assert_eq!(dead["dead_letters"][0]["key"], key.as_str(), "{dead}");
}
