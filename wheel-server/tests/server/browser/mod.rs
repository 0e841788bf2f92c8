//! A headless Chromium for tests, driven through `chromedriver` with the
//! `fantoccini` WebDriver client. The client is async and the tests are
//! not, so each [`Browser`] owns a current-thread tokio runtime and blocks
//! on one WebDriver call at a time; the session's background task runs
//! only inside those calls, so nothing else may touch the runtime.
//!
//! Every call is bounded ([`CALL_LIMIT`]) and panics with the command's
//! name on a WebDriver error, so a stuck browser fails the test rather
//! than hanging it. Dropping the [`Browser`] closes the session, then
//! stops chromedriver, even when a test panics.
//!
//! Without Chromium or chromedriver on the PATH, [`Browser::for_test`]
//! prints why and returns `None`, unless `WHEEL_REQUIRE_BROWSER=1` (as CI
//! sets), which makes it a failure.
#![allow(dead_code)] // each test file uses a different subset

use std::fmt::Display;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::wd::Capabilities;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};
use tokio::runtime::Runtime;

/// The W3C key of an element reference in WebDriver answers (and so in
/// what a script returns).
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// The longest one WebDriver call may take before the test fails.
const CALL_LIMIT: Duration = Duration::from_secs(60);

/// How long chromedriver may take to listen once started.
const DRIVER_START: Duration = Duration::from_secs(20);

/// The first of `names` found on the PATH.
fn on_path(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    names.iter().find_map(|name| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}

/// The chromedriver process, killed when dropped.
struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A browser session, closed (and chromedriver killed) when dropped.
pub struct Browser {
    client: Client,
    /// Drives `client`'s session task; used only by `call` and `drop`.
    rt: Runtime,
    /// Stopped once `drop` has closed the session (fields drop after it).
    driver: Driver,
    /// Chromium's profile, fresh for each browser.
    _profile: tempfile::TempDir,
}

/// A page element.
#[derive(Clone, Debug)]
pub struct Element(fantoccini::elements::Element);

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

    fn start(chromium: &Path, driver: &Path) -> Browser {
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
        // From here on a panic drops the driver, which stops chromedriver.
        let driver = Driver(child);
        // chromedriver takes requests as soon as it listens.
        wheel_testkit::eventually_within(DRIVER_START, "chromedriver to listen", || {
            TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        let profile = tempfile::tempdir().unwrap();
        let caps = capabilities(chromium, profile.path());
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime for the WebDriver client");
        // chromedriver is on loopback, so a plain HTTP connector is all
        // the client needs (no TLS stack).
        let mut builder = ClientBuilder::new(HttpConnector::new());
        builder.capabilities(caps);
        let url = format!("http://127.0.0.1:{port}");
        let client = block_on(&rt, "new session", builder.connect(&url));
        Browser {
            client,
            rt,
            driver,
            _profile: profile,
        }
    }

    /// Runs one WebDriver call to its answer; panics, naming `what`, on a
    /// WebDriver error or after [`CALL_LIMIT`].
    fn call<T, E: Display>(&self, what: &str, call: impl Future<Output = Result<T, E>>) -> T {
        block_on(&self.rt, what, call)
    }

    /// Opens `url`.
    pub fn goto(&self, url: &str) {
        self.call("goto", self.client.goto(url));
    }

    /// Every element matching the CSS `selector`.
    pub fn find_all(&self, selector: &str) -> Vec<Element> {
        let found = self.call(selector, self.client.find_all(Locator::Css(selector)));
        found.into_iter().map(Element).collect()
    }

    /// The one element matching `selector`.
    pub fn find(&self, selector: &str) -> Element {
        let mut all = self.find_all(selector);
        assert_eq!(all.len(), 1, "{selector}");
        all.remove(0)
    }

    /// The first element matching `selector` inside `parent`.
    pub fn find_in(&self, parent: &Element, selector: &str) -> Element {
        Element(self.call(selector, parent.0.find(Locator::Css(selector))))
    }

    /// The rendered text of `e`.
    pub fn text(&self, e: &Element) -> String {
        self.call("text", e.0.text())
    }

    /// An attribute of `e`.
    pub fn attribute(&self, e: &Element, name: &str) -> Option<String> {
        self.call(name, e.0.attr(name))
    }

    /// Types `text` into `e`.
    pub fn type_into(&self, e: &Element, text: &str) {
        self.call("send keys", e.0.send_keys(text));
    }

    /// Clicks `e`.
    pub fn click(&self, e: &Element) {
        self.call("click", e.0.click());
    }

    /// Runs `script` (a function body, given the JSON array `args` as
    /// `arguments`) in the page; its return value. One script reads the
    /// page at one moment, which a sequence of element calls, racing the
    /// page's refreshes, does not.
    pub fn script(&self, script: &str, args: Value) -> Value {
        let Value::Array(args) = args else {
            panic!("script arguments must be a JSON array, not {args}");
        };
        self.call("execute script", self.client.execute(script, args))
    }

    /// The element a script returned, if it returned one.
    pub fn element(&self, value: &Value) -> Option<Element> {
        let id = value[ELEMENT].as_str()?;
        let e = fantoccini::elements::Element::from_element_id(
            self.client.clone(),
            id.to_owned().into(),
        );
        Some(Element(e))
    }

    /// A PNG of the window.
    pub fn screenshot(&self) -> Vec<u8> {
        self.call("screenshot", self.client.screenshot())
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // The session's task runs only inside `block_on`, so the session is
        // closed here, while the runtime is alive, rather than left to the
        // client's own drop. A failure to close is ignored: chromedriver
        // goes next, and the browser with it.
        let close = self.client.clone().close();
        let _ = self
            .rt
            .block_on(async { tokio::time::timeout(CALL_LIMIT, close).await });
    }
}

/// The capabilities that start a headless Chromium at `chromium` with its
/// profile in `profile`.
fn capabilities(chromium: &Path, profile: &Path) -> Capabilities {
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
    .chain([format!("--user-data-dir={}", profile.display())])
    .collect::<Vec<_>>();
    let mut caps = Capabilities::new();
    caps.insert("browserName".into(), json!("chrome"));
    caps.insert(
        "goog:chromeOptions".into(),
        json!({ "binary": chromium, "args": args }),
    );
    caps
}

/// `call` run to its answer on `rt`; panics, naming `what`, on an error
/// or after [`CALL_LIMIT`].
fn block_on<T, E: Display>(
    rt: &Runtime,
    what: &str,
    call: impl Future<Output = Result<T, E>>,
) -> T {
    // The timer is made inside the runtime, which it needs.
    match rt.block_on(async { tokio::time::timeout(CALL_LIMIT, call).await }) {
        Ok(Ok(answer)) => answer,
        Ok(Err(e)) => panic!("WebDriver {what}: {e}"),
        Err(_) => panic!("WebDriver {what}: no answer within {CALL_LIMIT:?}"),
    }
}
