//! How a receiver serves its connections ([`ReceiverOptions`]): one
//! request each, the default, or keep-alive; and which headers it keeps.
//! Plain data, read once when the receiver starts.

/// How a [`Receiver`](crate::Receiver) serves its connections, given to
/// [`Receiver::start_with`](crate::Receiver::start_with).
///
/// By default each connection carries one request (every reply says
/// `connection: close`), and a request's time is its connection's accept.
/// With [`keep_alive`](ReceiverOptions::keep_alive) a connection carries
/// as many requests as its client sends, as a pooling HTTP client
/// expects, and a request's time is when its head was read.
///
/// # Examples
///
/// ```
/// use wheel_testkit::{ReceiverOptions, Receiver, Reply};
///
/// let opts = ReceiverOptions::new().keep_alive();
/// let rx = Receiver::start_with(opts, |_, _| Reply::status(200));
/// assert_eq!(rx.count(), 0);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReceiverOptions {
    pub(crate) keep_alive: bool,
    /// The headers recorded, lower case; every header when `None`.
    pub(crate) headers: Option<Vec<String>>,
}

impl ReceiverOptions {
    /// The default: one request per connection.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(wheel_testkit::ReceiverOptions::new(), Default::default());
    /// ```
    pub fn new() -> ReceiverOptions {
        ReceiverOptions::default()
    }

    /// Keeps connections open for further requests; each request's time
    /// ([`Received::at`](crate::Received::at)) is then when its head was
    /// read, before its body.
    ///
    /// # Examples
    ///
    /// ```
    /// let opts = wheel_testkit::ReceiverOptions::new().keep_alive();
    /// assert_ne!(opts, wheel_testkit::ReceiverOptions::new());
    /// ```
    pub fn keep_alive(mut self) -> ReceiverOptions {
        self.keep_alive = true;
        self
    }

    /// Records only the headers named (in any case) of each request, for a
    /// receiver that keeps many requests and reads a few headers of each.
    /// The others are still read, just not kept in
    /// [`Received::headers`](crate::Received::headers).
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_testkit::ReceiverOptions;
    ///
    /// let opts = ReceiverOptions::new().only_headers(&["Wheel-Timer-Key"]);
    /// assert_ne!(opts, ReceiverOptions::new());
    /// ```
    pub fn only_headers(mut self, names: &[&str]) -> ReceiverOptions {
        self.headers = Some(names.iter().map(|n| n.to_ascii_lowercase()).collect());
        self
    }
}
