//! What a callback timer sends ([`HttpCallback`], [`Method`]) and the
//! checks `add_callback` makes before anything is stored.
//!
//! The checks are the client's own: the URL parses as the `http` crate's
//! `Uri` that requests are built with, and names and values are the `http`
//! crate's `HeaderName` and `HeaderValue`, so a callback that is stored can
//! always be sent.
//!
//! Node state: none.

use std::fmt;
use std::str::FromStr;

use http::{HeaderName, HeaderValue, Uri};

use super::wire;
use crate::{DurableError, RetryPolicy};

/// The HTTP method of a callback.
///
/// # Examples
///
/// ```
/// use wheel_durable::http::Method;
///
/// assert_eq!("patch".parse::<Method>(), Ok(Method::Patch));
/// assert!("TRACE".parse::<Method>().is_err());
/// assert_eq!(Method::Delete.as_str(), "DELETE");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// `GET`: sent without a body when the body is empty.
    Get,
    /// `POST`.
    Post,
    /// `PUT`.
    Put,
    /// `PATCH`.
    Patch,
    /// `DELETE`: sent without a body when the body is empty.
    Delete,
}

impl Method {
    /// Every method, in the order of their codes in a stored callback.
    pub(crate) const ALL: [Method; 5] = [
        Method::Get,
        Method::Post,
        Method::Put,
        Method::Patch,
        Method::Delete,
    ];

    /// The method's name as sent on the wire.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(wheel_durable::http::Method::Post.as_str(), "POST");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
        }
    }

    /// Whether an empty body is left out of the request entirely (no
    /// `Content-Length: 0`), as clients do for these methods.
    pub(crate) fn omits_empty_body(self) -> bool {
        matches!(self, Method::Get | Method::Delete)
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Method {
    type Err = DurableError;

    /// Parses a method name, in any case.
    fn from_str(s: &str) -> Result<Method, DurableError> {
        Method::ALL
            .into_iter()
            .find(|m| m.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| DurableError::InvalidMethod(s.to_owned()))
    }
}

/// One HTTP request to send when a callback timer is due.
///
/// [`DurableTimers::add_callback_at`](crate::DurableTimers::add_callback_at)
/// checks it and stores it as the timer's payload; a node built with
/// [`http`](crate::DurableTimersBuilder::http) sends it. Set
/// `Content-Type` yourself in `headers` when the body needs one.
///
/// # Examples
///
/// ```
/// use wheel_durable::http::{HttpCallback, Method};
///
/// let cb = HttpCallback::new(Method::Post, "https://shop.example/orders/17/close")
///     .header("Content-Type", "application/json")
///     .body(br#"{"reason":"unpaid"}"#.to_vec());
/// assert_eq!(cb.headers.len(), 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpCallback {
    /// The method.
    pub method: Method,
    /// An absolute `http://` or `https://` URL.
    pub url: String,
    /// Extra request headers, sent in this order. Names starting with
    /// `Wheel-` or `webhook-` (the Standard Webhooks headers), `Host` and
    /// `Content-Length` are the node's, and the hop-by-hop headers
    /// (`Connection`, `Keep-Alive`, `Proxy-Connection`, `TE`, `Trailer`,
    /// `Transfer-Encoding`, `Upgrade`, `Expect`, `Proxy-Authenticate`,
    /// `Proxy-Authorization`, `HTTP2-Settings`) belong to one connection,
    /// not to the request: all are refused. At most [`MAX_HEADERS`]
    /// headers of at most [`MAX_HEADER_BYTES`] in all (names and values).
    pub headers: Vec<(String, String)>,
    /// The request body (counted against the store's payload limit).
    pub body: Vec<u8>,
    /// This callback's own retry policy, or `None` for the node's (see
    /// [`retry`](HttpCallback::retry)).
    pub retry: Option<RetryPolicy>,
    /// The flow key this callback counts against, or `None` for its URL's
    /// origin (see [`flow`](HttpCallback::flow)).
    pub flow: Option<String>,
}

/// Header names (lowercase) the client or the node sets, and the
/// hop-by-hop ones (RFC 9110 section 7.6.1, and those older proxies still
/// act on): a callback may not set them. A hop-by-hop header would steer
/// the connection (an `Upgrade`, an `Expect: 100-continue` the node does
/// not wait for) or a proxy between the node and the target, never the
/// target's request.
///
/// # Examples
///
/// ```
/// use wheel_durable::http::{HttpCallback, Method, RESERVED_HEADERS};
///
/// assert!(RESERVED_HEADERS.contains(&"upgrade"));
/// let cb = HttpCallback::new(Method::Get, "http://a.example/").header("Upgrade", "h2c");
/// assert!(cb.to_payload().is_err());
/// ```
pub const RESERVED_HEADERS: [&str; 13] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
    "expect",
    "proxy-authenticate",
    "proxy-authorization",
    "http2-settings",
];

/// Name prefixes (lowercase) the node's own headers use: `Wheel-*`, and
/// the Standard Webhooks headers, which receivers read as the node's
/// (`webhook-id`, `webhook-timestamp`, `webhook-signature` and any later
/// one). A callback may set no header starting with one.
///
/// # Examples
///
/// ```
/// use wheel_durable::http::{HttpCallback, Method, RESERVED_HEADER_PREFIXES};
///
/// assert!(RESERVED_HEADER_PREFIXES.contains(&"webhook-"));
/// let cb = HttpCallback::new(Method::Get, "http://a.example/").header("Webhook-Version", "1");
/// assert!(cb.to_payload().is_err());
/// ```
pub const RESERVED_HEADER_PREFIXES: [&str; 2] = ["wheel-", "webhook-"];

/// The most extra headers one callback may carry.
///
/// # Examples
///
/// ```
/// use wheel_durable::http::{HttpCallback, Method, MAX_HEADERS};
///
/// let many = (0..=MAX_HEADERS).fold(
///     HttpCallback::new(Method::Get, "http://a.example/"),
///     |cb, i| cb.header(format!("X-H{i}"), "1"),
/// );
/// assert!(many.to_payload().is_err());
/// ```
pub const MAX_HEADERS: usize = 64;

/// The most bytes one callback's extra headers may take, names and values
/// together: a callback is stored and sent many times, and receivers
/// commonly refuse a request head much over 8 to 16 KiB.
///
/// # Examples
///
/// ```
/// use wheel_durable::http::{HttpCallback, Method, MAX_HEADER_BYTES};
///
/// let big = HttpCallback::new(Method::Get, "http://a.example/")
///     .header("X-Big", "x".repeat(MAX_HEADER_BYTES));
/// assert!(big.to_payload().is_err());
/// ```
pub const MAX_HEADER_BYTES: usize = 16 * 1024;

impl HttpCallback {
    /// A callback with no extra headers and an empty body.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_durable::http::{HttpCallback, Method};
    /// let cb = HttpCallback::new(Method::Get, "http://127.0.0.1:8080/ping");
    /// assert!(cb.body.is_empty());
    /// ```
    pub fn new(method: Method, url: impl Into<String>) -> HttpCallback {
        HttpCallback {
            method,
            url: url.into(),
            headers: Vec::new(),
            body: Vec::new(),
            retry: None,
            flow: None,
        }
    }

    /// Adds a request header.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_durable::http::{HttpCallback, Method};
    /// let cb = HttpCallback::new(Method::Get, "http://a.example/").header("Accept", "text/plain");
    /// assert_eq!(cb.headers[0].0, "Accept");
    /// ```
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> HttpCallback {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the request body.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_durable::http::{HttpCallback, Method};
    /// let cb = HttpCallback::new(Method::Put, "http://a.example/x").body(b"on".to_vec());
    /// assert_eq!(cb.body, b"on");
    /// ```
    #[must_use]
    pub fn body(mut self, body: Vec<u8>) -> HttpCallback {
        self.body = body;
        self
    }

    /// Gives this callback its own retry policy: its back-off and its
    /// attempts decide the retries of this callback instead of the node's
    /// [`RetryPolicy`] (a `Retry-After` in a reply still wins over the
    /// back-off). The node's policy stays the ceiling on attempts: a
    /// callback gets at most as many runs as the node's
    /// [`attempts`](RetryPolicy::attempts), because the node ends every
    /// timer's runs there. The policy is stored with the callback (44 bytes
    /// more of payload), so it holds on every node that sends it.
    ///
    /// A callback with a policy is stored in a newer payload layout, which
    /// only nodes that know policies read as a callback; one without is
    /// stored as before.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use wheel_durable::http::{HttpCallback, Method};
    /// use wheel_durable::RetryPolicy;
    ///
    /// let cb = HttpCallback::new(Method::Post, "https://shop.example/orders/17/close")
    ///     .retry(RetryPolicy::new().initial(Duration::from_secs(5)).max_attempts(3));
    /// assert_eq!(cb.retry.as_ref().map(RetryPolicy::attempts), Some(3));
    /// let payload = cb.to_payload()?;
    /// assert_eq!(HttpCallback::from_payload(&payload), Some(cb));
    /// # Ok::<(), wheel_durable::DurableError>(())
    /// ```
    #[must_use]
    pub fn retry(mut self, policy: RetryPolicy) -> HttpCallback {
        self.retry = Some(policy);
        self
    }

    /// Names the flow key this callback counts against, instead of its
    /// URL's origin: callbacks that share a flow key are paused and
    /// resumed together ([`DurableTimers::pause_flow`]). A key is 1 to 512
    /// bytes without a control character, checked when the callback is
    /// added. It is stored with the callback, in a newer payload layout
    /// that only nodes that know flow keys read as a callback.
    ///
    /// [`DurableTimers::pause_flow`]: crate::DurableTimers::pause_flow
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_durable::http::{HttpCallback, Method};
    ///
    /// let cb = HttpCallback::new(Method::Post, "https://shop.example/hooks/order");
    /// assert_eq!(cb.flow_key(), "https://shop.example");
    /// let cb = cb.flow("shop-orders");
    /// assert_eq!(cb.flow_key(), "shop-orders");
    /// ```
    #[must_use]
    pub fn flow(mut self, key: impl Into<String>) -> HttpCallback {
        self.flow = Some(key.into());
        self
    }

    /// The flow key this callback counts against: the one named with
    /// [`flow`](HttpCallback::flow), else its URL's origin (scheme, host,
    /// and the port when it is not the scheme's default), else the URL as
    /// written when it does not parse.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_durable::http::{HttpCallback, Method};
    ///
    /// let cb = HttpCallback::new(Method::Get, "http://127.0.0.1:8080/ping?x=1");
    /// assert_eq!(cb.flow_key(), "http://127.0.0.1:8080");
    /// let cb = HttpCallback::new(Method::Get, "HTTPS://Shop.Example:443/a");
    /// assert_eq!(cb.flow_key(), "https://shop.example");
    /// ```
    pub fn flow_key(&self) -> String {
        if let Some(flow) = &self.flow {
            return flow.clone();
        }
        match url::Url::parse(&self.url) {
            Ok(u) => u.origin().ascii_serialization(),
            Err(_) => self.url.clone(),
        }
    }

    /// Reads back a callback from a timer's payload (for instance a dead
    /// letter's), or `None` when the payload is not a callback.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_durable::http::HttpCallback;
    /// assert_eq!(HttpCallback::from_payload(b"close"), None);
    /// ```
    pub fn from_payload(payload: &[u8]) -> Option<HttpCallback> {
        wire::decode(payload)
    }

    /// Checks the URL and the headers (the method is checked by its type),
    /// then encodes the callback as the payload
    /// [`add_callback_at`](crate::DurableTimers::add_callback_at)
    /// stores: for adding many callbacks with
    /// [`add_many`](crate::DurableTimers::add_many).
    ///
    /// # Errors
    ///
    /// As for `add_callback`'s checks of the request.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_durable::http::{HttpCallback, Method};
    /// let cb = HttpCallback::new(Method::Post, "http://127.0.0.1:8080/remind/9");
    /// let payload = cb.to_payload()?;
    /// assert_eq!(HttpCallback::from_payload(&payload), Some(cb));
    /// # Ok::<(), wheel_durable::DurableError>(())
    /// ```
    pub fn to_payload(&self) -> Result<Vec<u8>, DurableError> {
        self.uri()?;
        check_headers(&self.headers)?;
        if let Some(flow) = &self.flow {
            crate::flow_key::check_flow_key(flow)?;
        }
        Ok(wire::encode(self))
    }

    /// The URL as the client parses it: absolute, `http` or `https`, with
    /// a host, and read by the client's URL parser too.
    pub(crate) fn uri(&self) -> Result<Uri, DurableError> {
        let bad = |why: String| DurableError::InvalidUrl(format!("{:?}: {why}", self.url));
        let uri: Uri = self.url.parse().map_err(|e| bad(format!("{e}")))?;
        match uri.scheme_str() {
            Some(s) if s.eq_ignore_ascii_case("http") || s.eq_ignore_ascii_case("https") => {}
            Some(s) => return Err(bad(format!("the scheme {s:?} is not http or https"))),
            None => return Err(bad("not an absolute URL".into())),
        }
        if uri.host().is_none_or(str::is_empty) {
            return Err(bad("no host".into()));
        }
        // The client reads the URL again with its own parser, which
        // refuses some hosts the `Uri` takes (`0x100000000`): such a
        // callback could never be sent.
        super::target::sent_url(&uri).map_err(bad)?;
        Ok(uri)
    }
}

/// Checks a callback's headers: each one, their number and their size.
fn check_headers(headers: &[(String, String)]) -> Result<(), DurableError> {
    if headers.len() > MAX_HEADERS {
        return Err(DurableError::InvalidHeader(format!(
            "{} headers; a callback carries at most {MAX_HEADERS}",
            headers.len()
        )));
    }
    let bytes: usize = headers.iter().map(|(n, v)| n.len() + v.len()).sum();
    if bytes > MAX_HEADER_BYTES {
        return Err(DurableError::InvalidHeader(format!(
            "{bytes} bytes of headers; a callback carries at most {MAX_HEADER_BYTES}"
        )));
    }
    headers
        .iter()
        .try_for_each(|(name, value)| check_header(name, value))
}

/// Checks one header as the client will send it.
pub(crate) fn check_header(name: &str, value: &str) -> Result<(), DurableError> {
    let bad = |why: &str| DurableError::InvalidHeader(format!("{name:?}: {why}"));
    let parsed = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad("not a valid name"))?;
    let lower = parsed.as_str();
    if RESERVED_HEADER_PREFIXES
        .iter()
        .any(|p| lower.starts_with(p))
    {
        return Err(bad("set by the node, not by a callback"));
    }
    if RESERVED_HEADERS.contains(&lower) {
        return Err(bad(
            "set by the node or hop-by-hop (it belongs to a connection, not to the request)",
        ));
    }
    HeaderValue::from_str(value).map_err(|_| bad("not a valid value"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url_error(url: &str) -> bool {
        matches!(
            HttpCallback::new(Method::Get, url).to_payload(),
            Err(DurableError::InvalidUrl(_))
        )
    }

    #[test]
    fn methods_parse_in_any_case_and_only_the_five() {
        for m in Method::ALL {
            assert_eq!(m.as_str().parse::<Method>(), Ok(m));
            assert_eq!(m.as_str().to_lowercase().parse::<Method>(), Ok(m));
        }
        for bad in ["", "HEAD", "OPTIONS", "TRACE", "CONNECT", "GETS"] {
            assert_eq!(
                bad.parse::<Method>(),
                Err(DurableError::InvalidMethod(bad.into()))
            );
        }
    }

    #[test]
    fn only_absolute_http_and_https_urls_with_a_host_pass() {
        for good in [
            "http://127.0.0.1:9/x",
            "https://shop.example/orders/17?close=1",
            "HTTP://a.example",
            "http://[::1]:8080/",
        ] {
            assert!(!url_error(good), "{good}");
        }
        for bad in [
            "",
            "/relative",
            "ftp://a.example/",
            "mailto:x@a.example",
            "http://",
            "http:// a.example/",
            "http://a.example/\n",
            "not a url",
        ] {
            assert!(url_error(bad), "{bad:?}");
        }
    }

    #[test]
    fn header_names_and_values_are_checked_and_ours_are_refused() {
        assert_eq!(check_header("Content-Type", "application/json"), Ok(()));
        assert_eq!(check_header("X-Empty", ""), Ok(()));
        for (name, value) in [
            ("", "v"),
            ("Bad Name", "v"),
            ("X-A", "line\nbreak"),
            ("X-A", "nul\0"),
            ("wheel-fence", "1"),
            ("Wheel-Signature", "t=1,v1=00"),
            ("Webhook-Id", "msg_1"),
            ("webhook-timestamp", "1"),
            ("webhook-signature", "v1,AA=="),
            ("Host", "a.example"),
            ("content-length", "3"),
            ("Transfer-Encoding", "chunked"),
            ("Connection", "close"),
            ("webhook-version", "1"),
            ("Webhook-Foo", "x"),
            ("Upgrade", "websocket"),
            ("Keep-Alive", "timeout=5"),
            ("TE", "trailers"),
            ("Trailer", "X-A"),
            ("Proxy-Connection", "keep-alive"),
            ("Expect", "100-continue"),
            ("Proxy-Authorization", "Basic AA=="),
            ("HTTP2-Settings", "AAMAAABkAAQAAP__"),
        ] {
            assert!(
                matches!(
                    check_header(name, value),
                    Err(DurableError::InvalidHeader(_))
                ),
                "{name:?}: {value:?}"
            );
        }
    }

    #[test]
    fn header_count_and_size_are_capped() {
        let with = |n: usize, value: &str| {
            (0..n).fold(
                HttpCallback::new(Method::Get, "http://a.example/"),
                |cb, i| cb.header(format!("X-{i:04}"), value),
            )
        };
        assert!(with(MAX_HEADERS, "v").to_payload().is_ok());
        assert!(matches!(
            with(MAX_HEADERS + 1, "v").to_payload(),
            Err(DurableError::InvalidHeader(_))
        ));
        // "X-0000" is 6 bytes: fill the budget exactly, then one byte over.
        let value = "v".repeat(MAX_HEADER_BYTES / 2 - 6);
        assert!(with(2, &value).to_payload().is_ok());
        let over = format!("{value}v");
        assert!(matches!(
            with(2, &over).to_payload(),
            Err(DurableError::InvalidHeader(_))
        ));
    }

    #[test]
    fn a_checked_callback_reads_back_from_its_payload() {
        let cb = HttpCallback::new(Method::Patch, "http://a.example/x")
            .header("X-A", "1")
            .body(vec![0, 1, 2]);
        let payload = cb.to_payload().unwrap();
        assert_eq!(HttpCallback::from_payload(&payload), Some(cb));
    }
}
