//! A headless Chromium for tests, driven through `chromedriver` with the
//! few WebDriver calls they need, as JSON over HTTP (the blocking reqwest
//! client the other tests use). A WebDriver crate is not used: the ones
//! there are (`fantoccini`, `thirtyfour`) are async and bring a second
//! HTTP stack's worth of crates for the dozen calls below.
//!
//! Without Chromium or chromedriver on the PATH, [`Browser::for_test`]
//! prints why and returns `None`, unless `WHEEL_REQUIRE_BROWSER=1` (as CI
//! sets), which makes it a failure.
#![allow(dead_code)] // each test file uses a different subset

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use reqwest::blocking::Client;
use serde_json::{Value, json};

/// The W3C key of an element reference in WebDriver answers.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// The first of `names` found on the PATH.
fn on_path(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    names.iter().find_map(|name| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}

/// A browser session, closed (and chromedriver killed) when dropped.
pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    client: Client,
    /// Chromium's profile, fresh for each browser.
    _profile: tempfile::TempDir,
}

/// A page element.
#[derive(Clone, Debug)]
pub struct Element(String);

impl Browser {
    /// A headless browser, or `None` (with the reason printed) when
    /// Chromium or chromedriver is missing and not required.
    pub fn for_test() -> Option<Browser> {
        let chromium = on_path(&["chromium", "chromium-browser", "google-chrome"]);
        let driver = on_path(&["chromedriver"]);
        let (Some(chromium), Some(driver)) = (chromium, driver) else {
            if std::env::var("WHEEL_REQUIRE_BROWSER").as_deref() == Ok("1") {
                panic!("WHEEL_REQUIRE_BROWSER=1 but chromium or chromedriver is not on the PATH");
            }
            eprintln!(
                "skipped: chromium not found (apt-get install chromium chromium-driver; \
                 set WHEEL_REQUIRE_BROWSER=1 to make this a failure)"
            );
            return None;
        };
        Some(Browser::start(&chromium, &driver))
    }

    fn start(chromium: &std::path::Path, driver: &std::path::Path) -> Browser {
        // The client (reqwest without a TLS provider of its own) needs one
        // installed before it is built, though it speaks only plain HTTP.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let child = Command::new(driver)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        // From here on a panic drops the browser, which stops chromedriver.
        let mut browser = Browser {
            driver: child,
            base: format!("http://127.0.0.1:{port}"),
            session: String::new(),
            client,
            _profile: tempfile::tempdir().unwrap(),
        };
        browser.wait_ready();
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            // Containers often have a small /dev/shm, which crashes tabs.
            "--disable-dev-shm-usage",
            "--window-size=1280,1100",
        ]
        .into_iter()
        .map(str::to_owned)
        .chain([format!(
            "--user-data-dir={}",
            browser._profile.path().display()
        )])
        .collect::<Vec<_>>();
        let caps = json!({ "capabilities": { "alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": { "binary": chromium, "args": args },
        } } });
        let answer = browser.call(reqwest::Method::POST, "/session", caps);
        browser.session = answer["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {answer}"))
            .to_owned();
        browser
    }

    /// Waits (up to 20 s) for chromedriver to answer that it is ready.
    fn wait_ready(&self) {
        let end = Instant::now() + Duration::from_secs(20);
        while self
            .client
            .get(format!("{}/status", self.base))
            .send()
            .ok()
            .and_then(|r| r.json::<Value>().ok())
            .is_none_or(|v| v["value"]["ready"] != true)
        {
            assert!(Instant::now() < end, "chromedriver did not get ready");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// One WebDriver command; its `value`. Panics on a WebDriver error.
    fn call(&self, method: reqwest::Method, path: &str, body: Value) -> Value {
        let url = if path == "/session" {
            format!("{}{path}", self.base)
        } else {
            format!("{}/session/{}{path}", self.base, self.session)
        };
        let mut r = self.client.request(method.clone(), url);
        if method != reqwest::Method::GET && method != reqwest::Method::DELETE {
            r = r.json(&body);
        }
        let response = r.send().unwrap_or_else(|e| panic!("{path}: {e}"));
        let status = response.status();
        let v: Value = response.json().unwrap();
        assert!(status.is_success(), "WebDriver {method} {path}: {v}");
        v["value"].clone()
    }

    /// Opens `url`.
    pub fn goto(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", json!({ "url": url }));
    }

    /// Every element matching the CSS `selector`.
    pub fn find_all(&self, selector: &str) -> Vec<Element> {
        let body = json!({ "using": "css selector", "value": selector });
        let found = self.call(reqwest::Method::POST, "/elements", body);
        found
            .as_array()
            .unwrap_or_else(|| panic!("{selector}: {found}"))
            .iter()
            .map(|e| Element(e[ELEMENT].as_str().unwrap().to_owned()))
            .collect()
    }

    /// The one element matching `selector`.
    pub fn find(&self, selector: &str) -> Element {
        let mut all = self.find_all(selector);
        assert_eq!(all.len(), 1, "{selector}");
        all.remove(0)
    }

    /// The first element matching `selector` inside `parent`.
    pub fn find_in(&self, parent: &Element, selector: &str) -> Element {
        let body = json!({ "using": "css selector", "value": selector });
        let path = format!("/element/{}/element", parent.0);
        let found = self.call(reqwest::Method::POST, &path, body);
        Element(found[ELEMENT].as_str().unwrap().to_owned())
    }

    /// The rendered text of `e`.
    pub fn text(&self, e: &Element) -> String {
        let path = format!("/element/{}/text", e.0);
        let v = self.call(reqwest::Method::GET, &path, Value::Null);
        v.as_str().unwrap_or_default().to_owned()
    }

    /// An attribute of `e`.
    pub fn attribute(&self, e: &Element, name: &str) -> Option<String> {
        let path = format!("/element/{}/attribute/{name}", e.0);
        let v = self.call(reqwest::Method::GET, &path, Value::Null);
        v.as_str().map(str::to_owned)
    }

    /// Types `text` into `e`.
    pub fn type_into(&self, e: &Element, text: &str) {
        let path = format!("/element/{}/value", e.0);
        self.call(reqwest::Method::POST, &path, json!({ "text": text }));
    }

    /// Clicks `e`.
    pub fn click(&self, e: &Element) {
        let path = format!("/element/{}/click", e.0);
        self.call(reqwest::Method::POST, &path, json!({}));
    }

    /// Runs `script` (a function body, given `args` as `arguments`) in the
    /// page; its return value. One script reads the page at one moment,
    /// which a sequence of element calls, racing the page's refreshes,
    /// does not.
    pub fn script(&self, script: &str, args: Value) -> Value {
        let body = json!({ "script": script, "args": args });
        self.call(reqwest::Method::POST, "/execute/sync", body)
    }

    /// The element a script returned, if it returned one.
    pub fn element(value: &Value) -> Option<Element> {
        value[ELEMENT].as_str().map(|id| Element(id.to_owned()))
    }

    /// A PNG of the window.
    pub fn screenshot(&self) -> Vec<u8> {
        let v = self.call(reqwest::Method::GET, "/screenshot", Value::Null);
        let text = v.as_str().unwrap_or_else(|| panic!("no screenshot: {v}"));
        // WebDriver sends the PNG as standard base64, with padding.
        STANDARD
            .decode(text)
            .unwrap_or_else(|e| panic!("screenshot not base64: {e}"))
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let url = format!("{}/session/{}", self.base, self.session);
            let _ = self.client.delete(url).send();
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
