//! HTTP callbacks: our durable timers sending each due callback with the
//! node's async client (`http` feature, defaults: `max_in_flight` 4096,
//! 1024 per host), against the one-second Redis wheel sending each on a
//! thread of its own ([`blocking`]), to a loopback [`receiver`] (the test
//! kit's, keep-alive) that answers `200` after a fixed delay and records
//! every request.
//!
//! - a burst: `n` callbacks all due at one moment, added up front;
//! - a spread: callbacks due evenly at a rate, for the sustained rate and
//!   the lateness at 1 000/s (both are a [`Shape`] given to [`run`]);
//! - [`in_flight`]: the bytes allocated per request held open.
//!
//! Every timer is keyed as the other durable runs' ([`key`]), and every
//! callback is the same `POST` to the receiver, so one payload serves all
//! (see [`callback_payload`]). [`tally`] reads the receiver's record.

pub mod blocking;
pub mod tally;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use wheel_durable::http::{HttpCallback, HttpConfig, Method};
use wheel_durable::{DurableTimers, TimerState};
use wheel_testkit::{Receiver, ReceiverOptions, Reply};

use super::ours::{self, Store};
use super::peer::{PeerNode, SecondWheel};
use super::{key, spread as spread_dues, temp_store, unix_ns, whole_ms};
use crate::alloc::Counting;
use tally::Tally;

/// The loopback endpoint of the section (and of the server section's
/// fleet): keep-alive, so that one client connection carries many
/// requests, answering every request `200` after `delay`. A request's
/// time is when its head was read.
///
/// # Panics
///
/// When no runtime or loopback listener can be had (out of threads or
/// descriptors).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use wheel_bench::durable::http::{callback_url, receiver};
///
/// let rx = receiver(Duration::from_millis(100));
/// assert_eq!(callback_url(&rx), format!("http://{}/callback", rx.addr()));
/// assert!(rx.finish().is_empty());
/// ```
pub fn receiver(delay: Duration) -> Receiver {
    // Only the headers the tally reads: the node sends more than the
    // control's plain threads, and keeping them would count against the
    // node in the memory figure, which subtracts the control.
    let options = ReceiverOptions::new().keep_alive().only_headers(&[
        "wheel-timer-key",
        "wheel-fence",
        "wheel-due",
    ]);
    Receiver::start_with(options, move |_, _| Reply::status(200).after(delay))
}

/// The URL callbacks are sent to at `rx` (see [`receiver`] for an
/// example).
pub fn callback_url(rx: &Receiver) -> String {
    rx.url("/callback")
}

/// Who sends the callbacks.
#[derive(Debug, Clone)]
pub enum Sender {
    /// Ours, one node on this store.
    Ours(Store),
    /// The one-second Redis wheel at this URL, a thread per callback.
    Peer(String),
}

/// Timers added per `add_many` call.
const BATCH: usize = 1_000;

/// The payload of a `POST` to `url` as `add_callback_at` stores it: every
/// timer of a run carries the same callback.
pub fn callback_payload(url: &str) -> Result<Vec<u8>, String> {
    HttpCallback::new(Method::Post, url)
        .to_payload()
        .map_err(|e| e.to_string())
}

/// One node of ours on `store`, sending callbacks, with `config`.
fn node(
    store: &Store,
    ns: &str,
    config: HttpConfig,
    in_flight: usize,
) -> Result<DurableTimers, String> {
    ours::builder(store, ns)
        .http(config)
        .max_in_flight(in_flight)
        .build()
        .map_err(|e| e.to_string())
}

/// Adds `keys[i]` due at `due[i]`, all with `payload`.
pub(crate) fn add_all(t: &DurableTimers, due: &[SystemTime], payload: &[u8]) -> Result<(), String> {
    let keys: Vec<String> = (0..due.len()).map(key).collect();
    let items: Vec<(&str, SystemTime, &[u8])> = keys
        .iter()
        .zip(due)
        .map(|(k, d)| (k.as_str(), *d, payload))
        .collect();
    for chunk in items.chunks(BATCH) {
        t.add_many(chunk).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// One run's setting: the endpoint's delay, the due times' lead and
/// spread, and how long after the last due time a request may arrive
/// before it counts as lost.
#[derive(Debug, Clone)]
pub struct Shape {
    /// Callbacks.
    pub n: usize,
    /// The endpoint's answer delay.
    pub delay: Duration,
    /// From the sender's start to the first due time.
    pub lead: Duration,
    /// Over how long the due times spread (zero: all at once).
    pub window: Duration,
    /// The bound for "lost".
    pub bound: Duration,
}

/// Runs `shape` with `sender` (Redis flushed by the caller).
pub fn run(sender: &Sender, shape: &Shape) -> Result<Tally, String> {
    let rx = receiver(shape.delay);
    let ns = format!("http-{}", shape.n);
    let due_at = |start: SystemTime| {
        if shape.window.is_zero() {
            vec![whole_ms(start + shape.lead); shape.n]
        } else {
            spread_dues(shape.n, start + shape.lead, shape.window)
        }
    };
    let tally_of = |rx: Receiver, due: &[SystemTime]| {
        let due_ns: Vec<i64> = due.iter().map(|d| unix_ns(*d)).collect();
        Tally::of_received(&rx.finish(), &due_ns)
    };
    match sender {
        Sender::Ours(store) => {
            let payload = callback_payload(&callback_url(&rx))?;
            let t = node(store, &ns, HttpConfig::new(), 4_096)?;
            let due = due_at(SystemTime::now());
            let out = add_all(&t, &due, &payload).map(|()| {
                wait(&rx, &due, shape.bound);
                // The receiver stops first, so that the log is final; a
                // missing callback still in the store was not sent yet (a
                // node behind), not lost.
                let mut tally = tally_of(rx, &due);
                let stored = |i: &&usize| {
                    let info = t.get(&key(**i));
                    matches!(info, Ok(Some(i)) if i.state != TimerState::Dead)
                };
                let not_sent = tally.missing.iter().filter(stored).count();
                tally.set_not_sent(not_sent);
                tally
            });
            t.shutdown().map_err(|e| e.to_string())?;
            if let Store::Embedded(path) = store {
                super::remove_store(path);
            }
            out
        }
        Sender::Peer(url) => {
            let wheel = Arc::new(SecondWheel::open(url, &ns).map_err(|e| e.to_string())?);
            let node =
                PeerNode::start(wheel.clone(), 1, blocking::thread_per_task(rx.addr()), None);
            let due = due_at(SystemTime::now());
            let items: Vec<(String, SystemTime)> =
                due.iter().enumerate().map(|(i, d)| (key(i), *d)).collect();
            for chunk in items.chunks(BATCH) {
                wheel.add_many(chunk, b"").map_err(|e| e.to_string())?;
            }
            wait(&rx, &due, shape.bound);
            node.stop();
            Ok(tally_of(rx, &due))
        }
    }
}

/// Waits for every request, or until `bound` after the last due time;
/// then a little longer for duplicates to show.
fn wait(rx: &Receiver, due: &[SystemTime], bound: Duration) {
    let last = due.iter().max().copied().unwrap_or_else(SystemTime::now);
    rx.wait_until(due.len(), last + bound);
    std::thread::sleep(Duration::from_millis(200));
}

/// The memory figure: bytes allocated per request in flight.
#[derive(Debug, Clone, Copy)]
pub struct InFlight {
    /// Requests held open when measured.
    pub open: usize,
    /// Live bytes allocated by the process since just before the due time,
    /// divided by `open`.
    pub bytes_per: f64,
}

/// Waits until `n` requests are open at `rx` (or `deadline` passes), then
/// divides the live bytes `counting` saw since it started among the open
/// requests; an error unless all `n` arrived.
fn measure_open(
    rx: &Receiver,
    counting: Counting,
    n: usize,
    deadline: SystemTime,
) -> Result<InFlight, String> {
    let all = rx.wait_until(n, deadline);
    let live = counting.live_bytes();
    drop(counting);
    let open = rx.count();
    if !all || open == 0 {
        return Err(format!("only {open} of {n} requests arrived"));
    }
    Ok(InFlight {
        open,
        bytes_per: live as f64 / open as f64,
    })
}

/// The control for [`in_flight`]: `n` requests held open by the
/// receiver, sent by `n` plain threads ([`blocking::send`]), counted the
/// same way: the receiver's side of a request, plus a thread's few
/// hundred heap bytes.
pub fn in_flight_control(n: usize, hold: Duration) -> Result<InFlight, String> {
    let rx = receiver(hold);
    let addr = rx.addr();
    let counting = Counting::start();
    let threads: Vec<_> = (0..n)
        .map(|i| std::thread::spawn(move || blocking::send(addr, &key(i))))
        .collect();
    let measured = measure_open(&rx, counting, n, SystemTime::now() + hold);
    for t in threads {
        let _ = t.join();
    }
    measured
}

/// The client's floor for [`in_flight`]: `n` requests sent by a bare
/// reqwest client (the one the node sends with, default settings, one
/// task per request) and held open by the receiver, counted the same way.
/// Less the receiver's side ([`in_flight_control`]), it is what the HTTP
/// client alone costs per request in flight, before anything of the node.
pub fn in_flight_reqwest(n: usize, hold: Duration) -> Result<InFlight, String> {
    // wheel builds reqwest without a TLS provider; plain HTTP needs none,
    // but the builder wants one installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rx = receiver(hold);
    let url = callback_url(&rx);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let client = reqwest::Client::builder()
        .build()
        .map_err(|e| e.to_string())?;
    let counting = Counting::start();
    for i in 0..n {
        let (c, url) = (client.clone(), url.clone());
        rt.spawn(async move {
            let sent = c.post(url).header("wheel-timer-key", key(i)).send().await;
            drop(sent);
        });
    }
    let measured = measure_open(&rx, counting, n, SystemTime::now() + hold);
    rt.shutdown_timeout(hold);
    measured
}

/// `n` callbacks due at once on the embedded store, to an endpoint that
/// answers after `hold`; the live bytes of the whole process (node and
/// receiver: an upper bound for the node's share) once all `n` are open.
pub fn in_flight(n: usize, hold: Duration) -> Result<InFlight, String> {
    let rx = receiver(hold);
    let payload = callback_payload(&callback_url(&rx))?;
    let path = temp_store("http-in-flight");
    let store = Store::Embedded(path.clone());
    let config = HttpConfig::new().per_host_limit(n);
    let out = (|| {
        let t = node(&store, "in-flight", config, n)?;
        let due = vec![whole_ms(SystemTime::now() + Duration::from_millis(1_500)); n];
        add_all(&t, &due, &payload)?;
        let until = due[0] - Duration::from_millis(100);
        if let Ok(left) = until.duration_since(SystemTime::now()) {
            std::thread::sleep(left);
        }
        let counting = Counting::start();
        let measured = measure_open(&rx, counting, n, due[0] + hold);
        rx.wait_until(usize::MAX, SystemTime::now() + hold);
        t.shutdown().map_err(|e| e.to_string())?;
        measured
    })();
    super::remove_store(&path);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_payload_reads_back_as_the_callback() {
        let url = "http://127.0.0.1:9/callback";
        let payload = callback_payload(url).unwrap();
        let cb = HttpCallback::from_payload(&payload).unwrap();
        assert_eq!((cb.method, cb.url.as_str()), (Method::Post, url));
    }

    #[test]
    fn ours_sends_each_callback_once_with_its_due_time() {
        let shape = Shape {
            n: 20,
            delay: Duration::ZERO,
            lead: Duration::from_millis(300),
            window: Duration::ZERO,
            bound: Duration::from_secs(20),
        };
        let store = Store::Embedded(temp_store("http-test"));
        let t = run(&Sender::Ours(store), &shape).unwrap();
        assert_eq!((t.received, t.lost, t.duplicates), (20, 0, 0));
        assert_eq!((t.wrong_due, t.foreign, t.early), (0, 0, 0));
    }
}
