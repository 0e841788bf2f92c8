//! What the receiver records of a request ([`Received`]), what a script
//! answers ([`Reply`]), and the script between them ([`Script`]). The two
//! values are plain data: the receiver fills a `Received` before the
//! script runs and reads a `Reply` after it returns.

use std::time::{Duration, SystemTime};

use super::gate::Gate;

/// The script: given a request and which request to its path this is (1
/// for the first), the reply. It runs on the receiver's runtime and must
/// not block: a reply to hold is a [`Reply::after`] or [`Reply::until`].
pub type Script = dyn Fn(&Received, usize) -> Reply + Send + Sync;

/// One request as the receiver saw it.
///
/// # Examples
///
/// ```
/// use wheel_testkit::{Receiver, Reply};
///
/// let rx = Receiver::start(|r, _| {
///     Reply::status(if r.header("x-ping").is_some() { 204 } else { 400 })
/// });
/// for r in rx.requests() {
///     println!("{} {} at {:?}: {} bytes", r.method, r.path, r.at, r.body.len());
/// }
/// ```
#[derive(Debug, Clone)]
pub struct Received {
    /// The method, upper case as sent (`POST`).
    pub method: String,
    /// The request target as sent: the path and the query, if any.
    pub path: String,
    /// Every header in the order sent; names in lower case (as HTTP/1.1
    /// parsers give them), values as bytes read as UTF-8, lossily.
    pub headers: Vec<(String, String)>,
    /// The whole body.
    pub body: Vec<u8>,
    /// The machine's clock when the request arrived. By default, when its
    /// connection was accepted: each connection carries one request, and
    /// the moment of the accept varies less under load than when its task
    /// gets to read the head. With
    /// [`ReceiverOptions::keep_alive`](crate::ReceiverOptions::keep_alive),
    /// when its head was read (before its body), since a connection
    /// carries many.
    pub at: SystemTime,
}

impl Received {
    /// A header's value (names in any case); the first if sent twice.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::SystemTime;
    /// use wheel_testkit::Received;
    ///
    /// let r = Received {
    ///     method: "POST".into(),
    ///     path: "/hook".into(),
    ///     headers: vec![("content-type".into(), "text/plain".into())],
    ///     body: b"hi".to_vec(),
    ///     at: SystemTime::now(),
    /// };
    /// assert_eq!(r.header("Content-Type"), Some("text/plain"));
    /// assert_eq!(r.header("x-missing"), None);
    /// ```
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What a script answers: a status, headers and a body, sent at once or
/// held until a delay passes and a [`Gate`] opens. The receiver holds a
/// reply as a timer on its runtime, not as a blocked thread, so thousands
/// can be held at once.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use wheel_testkit::Reply;
///
/// let busy = Reply::status(429).header("Retry-After", "1").body("later");
/// let slow = Reply::status(200).after(Duration::from_millis(1_500));
/// assert_eq!((busy.status, slow.status), (429, 200));
/// ```
#[derive(Debug, Clone)]
pub struct Reply {
    /// The status code (100 to 999).
    pub status: u16,
    /// Headers sent besides `content-length` and `connection`.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// How long the reply is held before it is sent.
    pub delay: Duration,
    /// A gate the reply waits at (after the delay) before it is sent.
    pub gate: Option<Gate>,
}

impl Reply {
    /// A reply with `status`, no headers, an empty body, sent at once.
    ///
    /// # Examples
    ///
    /// ```
    /// let r = wheel_testkit::Reply::status(503);
    /// assert!(r.body.is_empty() && r.headers.is_empty());
    /// ```
    pub fn status(status: u16) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: Vec::new(),
            delay: Duration::ZERO,
            gate: None,
        }
    }

    /// Adds a header.
    ///
    /// # Examples
    ///
    /// ```
    /// let r = wheel_testkit::Reply::status(302).header("Location", "/elsewhere");
    /// assert_eq!(r.headers, [("Location".to_owned(), "/elsewhere".to_owned())]);
    /// ```
    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the body.
    ///
    /// # Examples
    ///
    /// ```
    /// let r = wheel_testkit::Reply::status(404).body("gone");
    /// assert_eq!(r.body, b"gone");
    /// ```
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Reply {
        self.body = body.into();
        self
    }

    /// Holds the reply for `delay` before sending it (the request stays in
    /// flight meanwhile).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let r = wheel_testkit::Reply::status(200).after(Duration::from_secs(2));
    /// assert_eq!(r.delay, Duration::from_secs(2));
    /// ```
    pub fn after(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }

    /// Holds the reply until `gate` opens (the request stays in flight
    /// meanwhile).
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_testkit::{Gate, Reply};
    ///
    /// let gate = Gate::default();
    /// let r = Reply::status(200).until(&gate);
    /// assert!(r.gate.is_some());
    /// ```
    pub fn until(mut self, gate: &Gate) -> Reply {
        self.gate = Some(gate.clone());
        self
    }
}
