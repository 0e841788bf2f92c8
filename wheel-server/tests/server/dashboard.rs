//! The dashboard at `/`, in a real headless Chromium: the page asks for
//! the token, lists pending timers by due time and dead letters, revives a
//! dead letter with its button, shows the counters and the lateness chart,
//! shows keys and reasons as text, never as HTML, and lists schedules
//! with their next and last runs and a button to pause or resume each.

use crate::browser;
use crate::common;

use browser::{Browser, Element};
use common::{Server, TOKEN, eventually};
use reqwest::Method;
use serde_json::json;
use wheel_testkit::{Receiver, Reply};

/// A key that is HTML if anything parses it as such.
const XSS_KEY: &str = "<img src=x onerror=alert(1)>";
/// A dead letter's key: a slash to encode in the retry path, markup to escape.
const DEAD_KEY: &str = "hook/7 <b>bold</b>";

/// A callback receiver on loopback that answers its first request 404
/// (with markup in the body, which becomes the dead letter's reason) and
/// every later one 200; callbacks go to its URL [`HOOK`].
fn flaky_receiver() -> Receiver {
    Receiver::start(|_, nth| {
        if nth == 1 {
            Reply::status(404).body("<i>gone</i>!")
        } else {
            Reply::status(200)
        }
    })
}

/// The flaky receiver's path.
const HOOK: &str = "/hook";

/// The row of the table `rows` (a tbody id) whose key is `key`, if shown.
pub(crate) fn row(b: &Browser, rows: &str, key: &str) -> Option<Element> {
    let found = b.script(
        "return [...document.getElementById(arguments[0]).rows]
            .find((tr) => tr.dataset.key === arguments[1]) || null",
        json!([rows, key]),
    );
    b.element(&found)
}

/// The keys shown in the table `rows`, top to bottom.
fn keys(b: &Browser, rows: &str) -> Vec<String> {
    let found = b.script(
        "return [...document.getElementById(arguments[0]).rows]
            .map((tr) => tr.dataset.key).filter((k) => k !== undefined)",
        json!([rows]),
    );
    serde_json::from_value(found).unwrap()
}

/// The number a counter box shows (digits only: the page groups them).
fn counter(b: &Browser, name: &str) -> Option<u64> {
    let text = b.script(
        "const box = [...document.querySelectorAll('.counter')]
            .find((c) => c.dataset.counter === arguments[0]);
         return box ? box.querySelector('.value').textContent : ''",
        json!([name]),
    );
    let text = text.as_str()?;
    let digits: String = text.chars().filter(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[test]
fn the_dashboard_lists_revives_and_escapes() {
    let Some(b) = Browser::for_test() else {
        return;
    };
    let rx = flaky_receiver();
    let s = Server::start(&["--allow-private-targets"]);
    b.goto(&format!("{}/", s.base));

    // Without the token the lists cannot load, and the page says why.
    eventually("the page to ask for the token", || {
        b.text(&b.find("#notice")).contains("needs a token")
    });
    // A wrong token is refused, and can be forgotten.
    b.type_into(&b.find("#token"), "not-the-token");
    b.click(&b.find("#token-save"));
    eventually("the token to be refused", || {
        b.text(&b.find("#notice")).contains("was refused")
    });
    b.click(&b.find("#token-forget"));
    eventually("the page to ask again", || {
        b.text(&b.find("#notice")).contains("needs a token")
    });
    b.type_into(&b.find("#token"), TOKEN);
    b.click(&b.find("#token-save"));
    eventually("the notice to go", || b.text(&b.find("#notice")).is_empty());

    // Pending timers appear, by due time, with their keys as text.
    let later = |key: &str, delay: &str| json!({ "key": key, "delay": delay, "callback": { "url": rx.url(HOOK) } });
    assert_eq!(s.post("/v1/timers", later(XSS_KEY, "2m")).0, 201);
    assert_eq!(s.post("/v1/timers", later("order:17", "1m")).0, 201);
    eventually("both pending timers", || {
        keys(&b, "pending-rows") == ["order:17", XSS_KEY]
    });
    let order = row(&b, "pending-rows", "order:17").unwrap();
    // Due in a minute: "in 5x s" by the time the page shows it (a slow
    // machine may take a few seconds more to show it).
    let due_in = b.text(&b.find_in(&order, "td.when .rel"));
    let secs = due_in
        .strip_prefix("in ")
        .and_then(|s| s.strip_suffix(" s"))
        .and_then(|s| s.parse::<u32>().ok());
    assert!(secs.is_some_and(|s| (30..60).contains(&s)), "{due_in}");
    assert!(!b.text(&b.find_in(&order, "td.when .abs")).is_empty());
    let xss = row(&b, "pending-rows", XSS_KEY).unwrap();
    assert_eq!(b.text(&b.find_in(&xss, "td.key")), XSS_KEY);
    assert_eq!(
        b.script(
            "return document.querySelectorAll('img, i, b').length",
            json!([])
        ),
        0,
        "markup from the API became elements"
    );

    // A callback answered 404 makes a dead letter at once.
    let dead = json!({ "key": DEAD_KEY, "delay": 0, "callback": { "url": rx.url(HOOK) } });
    assert_eq!(s.post("/v1/timers", dead).0, 201);
    eventually("the dead letter", || {
        row(&b, "dead-rows", DEAD_KEY).is_some()
    });
    let letter = row(&b, "dead-rows", DEAD_KEY).unwrap();
    assert_eq!(b.text(&b.find_in(&letter, "td.key")), DEAD_KEY);
    let reason = b.text(&b.find_in(&letter, "td.reason"));
    assert!(
        reason.contains("404") && reason.contains("<i>gone</i>"),
        "{reason}"
    );
    assert_eq!(
        b.script(
            "return document.querySelectorAll('img, i, b').length",
            json!([])
        ),
        0
    );

    // The counters show the store's numbers, and the chart has its lines.
    eventually("the counters", || {
        counter(&b, "pending") == Some(2) && counter(&b, "dead") == Some(1)
    });
    eventually("the chart", || b.find_all("#chart polyline").len() == 2);

    let png = b.screenshot();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboard.png");
    std::fs::write(&path, &png).unwrap();
    println!("screenshot: {}", path.display());

    // Retry: the letter leaves the list, and the timer fires again (the
    // receiver now answers 200, so it is done rather than dead).
    b.click(&b.find_in(&letter, "button.retry"));
    eventually("the letter to leave the list", || {
        row(&b, "dead-rows", DEAD_KEY).is_none()
    });
    eventually("the second callback", || rx.count() == 2);
    let path = format!("/v1/timers/{}", DEAD_KEY.replace('/', "%2F"));
    eventually("the revived timer to be done", || s.get(&path).0 == 404);
    let (_, page) = s.get("/v1/dead-letters");
    assert_eq!(page["dead_letters"], json!([]), "{page}");
    eventually("the counters after the retry", || {
        counter(&b, "dead") == Some(0) && counter(&b, "fired").is_some_and(|n| n >= 2)
    });
    assert_eq!(keys(&b, "pending-rows"), ["order:17", XSS_KEY]);

    // The token lasts as long as the tab: a reload needs no new one.
    b.goto(&format!("{}/", s.base));
    eventually("the lists after a reload", || {
        keys(&b, "pending-rows") == ["order:17", XSS_KEY]
    });
    assert_eq!(b.text(&b.find("#notice")), "");
}

#[test]
fn the_page_is_open_and_its_data_needs_the_token() {
    let s = Server::start(&[]);
    let page = s.client.get(format!("{}/", s.base)).send().unwrap();
    assert_eq!(page.status(), 200);
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(csp.contains("script-src 'nonce-"), "{csp}");
    let html = page.text().unwrap();
    assert!(html.contains("<svg id=\"chart\""), "{html}");
    let metrics = s.client.get(format!("{}/metrics", s.base)).send().unwrap();
    assert_eq!(metrics.status(), 200);
    let open = s
        .client
        .get(format!("{}/v1/timers", s.base))
        .send()
        .unwrap();
    assert_eq!(open.status(), 401);
    assert_eq!(s.send(Method::GET, "/v1/timers", None).0, 200);
}

/// A schedule id with markup, shown as text.
const SCHEDULE_ID: &str = "nightly <b>report</b>";

#[test]
fn the_schedules_panel_shows_next_and_last_runs_and_pauses_and_resumes() {
    let Some(b) = Browser::for_test() else {
        return;
    };
    let rx = Receiver::start(|_, _| Reply::status(200));
    let s = Server::start(&["--allow-private-targets"]);
    let path = format!("/v1/schedules/{}", SCHEDULE_ID.replace('/', "%2F"));
    // From 2099: the only run during the test is the triggered one.
    let hourly = json!({ "every": "1h", "start": "2099-01-01T00:00:00Z",
        "callback": { "url": rx.url(HOOK) } });
    assert_eq!(s.send(Method::PUT, &path, Some(hourly)).0, 201);
    // A triggered run gives the schedule a last run, done.
    assert_eq!(
        s.send(Method::POST, &format!("{path}:trigger"), None).0,
        201
    );
    eventually("the triggered run", || rx.count() == 1);

    b.goto(&format!("{}/", s.base));
    b.type_into(&b.find("#token"), TOKEN);
    b.click(&b.find("#token-save"));
    eventually("the schedule's row", || {
        row(&b, "schedules-rows", SCHEDULE_ID).is_some()
    });
    let tr = row(&b, "schedules-rows", SCHEDULE_ID).unwrap();
    assert_eq!(b.text(&b.find_in(&tr, "td.key")), SCHEDULE_ID);
    assert_eq!(
        b.script("return document.querySelectorAll('b').length", json!([])),
        0,
        "markup from the API became elements"
    );
    // Next run: in 2099.
    let next = b.text(&b.find_in(&tr, "td.when .rel"));
    assert!(next.starts_with("in "), "{next}");
    let outcome = || {
        b.script(
            "return [...document.getElementById('schedules-rows').rows]
                .find((tr) => tr.dataset.key === arguments[0]).cells[3].dataset.outcome",
            json!([SCHEDULE_ID]),
        )
    };
    eventually("the last run done", || outcome() == "done");

    // Pause with the row's button: the schedule is paused, the button
    // resumes it.
    let button = b.find_in(&tr, "button.toggle");
    assert_eq!(b.text(&button), "Pause");
    b.click(&button);
    eventually("the schedule paused", || s.get(&path).1["paused"] == true);
    eventually("the button to offer resume", || b.text(&button) == "Resume");
    assert_eq!(b.text(&b.find_in(&tr, "td.when .abs")), "paused");
    b.click(&button);
    eventually("the schedule running", || s.get(&path).1["paused"] == false);
    eventually("the button to offer pause", || b.text(&button) == "Pause");
    eventually("the next run shown again", || {
        b.text(&b.find_in(&tr, "td.when .rel")).starts_with("in ")
    });
}
