//! Adding timers idempotently, and in groups.
//!
//! Adding is idempotent on the key: the add is the library's atomic
//! add-if-absent, so of concurrent requests for one key, on any servers,
//! exactly one creates the timer (201). Every other request for that key
//! then reads the timer back and compares: the same content answers 200
//! with the existing timer, different content 409. The same content means
//! the same callback (method, URL, headers, body) and, when the request
//! gives `due_at`, the same first due time to the millisecond; a `delay`
//! is relative to the moment of the request, so it is not compared. A key
//! is free again once its timer has fired successfully or was cancelled.
//!
//! Requests that add one timer each do not make a store call each. They
//! queue their timer with the [`Adder`], whose task takes everything
//! queued and adds it with one `add_many_with` call on a blocking thread,
//! at most [`GROUPS_IN_FLIGHT`] calls at a time; timers that come while
//! those run make the next group. The answer is the same as one call per
//! request would give (each request still waits until its own timer is
//! durable), but a loaded server makes one store call and one thread
//! hand-over per group instead of per request. An idle server's single
//! request goes alone, at once.
//!
//! Within a group, a key that comes twice is added by its first request;
//! the second then reads it back and compares, as it would have after the
//! first request's own call. A bad timer in a group (an input error) does
//! not fail the others: nothing was written, and the group is added one
//! timer at a time instead, each with its own answer. A store error fails the whole group, each request
//! with that error.

use std::sync::Arc;
use std::time::SystemTime;

use tokio::sync::{mpsc, oneshot, Semaphore};
use wheel_durable::http::HttpCallback;
use wheel_durable::{AddMode, DurableError, DurableTimers, TimerInfo};

use crate::json::Checked;

/// Store calls of groups running at once: while one runs, the next group
/// gathers (and the embedded store's writer may commit two together).
const GROUPS_IN_FLIGHT: usize = 2;

/// Timers in one group at most (the store chunks larger calls anyway).
const MAX_GROUP: usize = 1_000;

/// What adding one timer came to.
#[derive(Debug)]
pub(crate) enum Added {
    /// Created by this add.
    Created,
    /// A timer with this key and the same content exists.
    Same(TimerInfo),
    /// A timer with this key exists with other content.
    Different,
    /// Timers under this key kept ending between the add and the read.
    Churning,
}

/// How often [`add_one`] tries while the key's timers keep ending between
/// its add and its read (bounded, so that churn cannot hold a request).
const ADD_TRIES: usize = 4;

/// Whether the stored timer `info` has the content the request `c` asks for.
fn same_content(info: &TimerInfo, c: &Checked) -> bool {
    HttpCallback::from_payload(&info.payload).as_ref() == Some(&c.callback)
        && (!c.absolute || info.first_due == c.due)
}

/// Adds `c` unless its key exists, then compares. A timer that ends
/// between the add and the read frees its key: the add is tried again.
pub(crate) fn add_one(t: &DurableTimers, c: &Checked) -> Result<Added, DurableError> {
    for _ in 0..ADD_TRIES {
        if t.add_callback_if_absent(&c.key, c.due, &c.callback)? {
            return Ok(Added::Created);
        }
        if let Some(info) = t.get(&c.key)? {
            return Ok(if same_content(&info, c) {
                Added::Same(info)
            } else {
                Added::Different
            });
        }
    }
    Ok(Added::Churning)
}

/// Whether `e` is about one timer's input (nothing was written), rather
/// than about the store.
fn is_input_error(e: &DurableError) -> bool {
    matches!(
        e,
        DurableError::InvalidKey
            | DurableError::PayloadTooLarge { .. }
            | DurableError::InvalidTime
            | DurableError::InvalidMethod(_)
            | DurableError::InvalidUrl(_)
            | DurableError::InvalidHeader(_)
    )
}

/// Why a group was not added: the index of the timer at fault, when the
/// error is about one timer's input.
pub(crate) type GroupError = (Option<usize>, DurableError);

/// Adds every timer of `group` as [`add_one`] would, with one store call
/// for all of them: one answer per timer, in order. An error about input
/// (a timer the store refuses) comes before anything is written.
pub(crate) fn add_group(
    t: &DurableTimers,
    group: &[Checked],
) -> Result<Vec<Result<Added, DurableError>>, GroupError> {
    let mut payloads = Vec::with_capacity(group.len());
    for (i, c) in group.iter().enumerate() {
        payloads.push(c.callback.to_payload().map_err(|e| (Some(i), e))?);
    }
    let entries: Vec<(&str, SystemTime, &[u8])> = group
        .iter()
        .zip(&payloads)
        .map(|(c, p)| (c.key.as_str(), c.due, p.as_slice()))
        .collect();
    let fresh = t
        .add_many_with(&entries, AddMode::IfAbsent)
        .map_err(|e| (None, e))?;
    Ok(group
        .iter()
        .zip(fresh)
        .map(|(c, added)| {
            if added {
                Ok(Added::Created)
            } else {
                add_one(t, c)
            }
        })
        .collect())
}

/// [`add_group`] for requests of one timer each: every timer gets its own
/// answer. When one timer is refused, nothing was written, and each is
/// added on its own instead (so one bad request fails alone); a store
/// error fails them all.
fn add_requests(t: &DurableTimers, group: &[Checked]) -> Vec<Result<Added, DurableError>> {
    match add_group(t, group) {
        Ok(answers) => answers,
        Err((_, e)) if group.len() > 1 && is_input_error(&e) => {
            group.iter().map(|c| add_one(t, c)).collect()
        }
        Err((_, e)) => group.iter().map(|_| Err(e.clone())).collect(),
    }
}

/// A timer waiting for its group, and where its answer goes.
struct Queued {
    timer: Checked,
    answer: oneshot::Sender<Result<Added, DurableError>>,
}

/// The queue of timers added one per request; see the module's
/// documentation.
pub(crate) struct Adder {
    /// Unbounded, yet bounded by the requests in flight: each queued timer
    /// has its request waiting for the answer.
    queue: mpsc::UnboundedSender<Queued>,
}

impl Adder {
    /// Starts the adding task on the current tokio runtime. It ends once
    /// the adder is dropped and the queue is empty.
    pub(crate) fn start(timers: Arc<DurableTimers>) -> Adder {
        let (queue, waiting) = mpsc::unbounded_channel();
        tokio::spawn(gather(timers, waiting));
        Adder { queue }
    }

    /// Adds `timer` in the next group; `None` if the adding task is gone
    /// (the server stops).
    pub(crate) async fn add(&self, timer: Checked) -> Option<Result<Added, DurableError>> {
        let (answer, answered) = oneshot::channel();
        self.queue.send(Queued { timer, answer }).ok()?;
        answered.await.ok()
    }
}

/// The adding task: takes what is queued, at most [`MAX_GROUP`], once a
/// call is free, and adds it on a blocking thread.
async fn gather(timers: Arc<DurableTimers>, mut waiting: mpsc::UnboundedReceiver<Queued>) {
    let calls = Arc::new(Semaphore::new(GROUPS_IN_FLIGHT));
    loop {
        let Ok(call) = calls.clone().acquire_owned().await else {
            return;
        };
        let mut queued = Vec::new();
        if waiting.recv_many(&mut queued, MAX_GROUP).await == 0 {
            return; // the adder is gone and the queue empty
        }
        let timers = timers.clone();
        tokio::task::spawn_blocking(move || {
            let (group, answers): (Vec<Checked>, Vec<_>) =
                queued.into_iter().map(|q| (q.timer, q.answer)).unzip();
            let results = add_requests(&timers, &group);
            // Freed before the answers go: the next group may start.
            drop(call);
            for (answer, result) in answers.into_iter().zip(results) {
                // A request whose client went away no longer listens.
                let _ = answer.send(result);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use wheel_durable::http::Method;
    use wheel_durable::DEFAULT_MAX_PAYLOAD;

    use super::*;

    fn timer(key: &str, url: &str, body: Vec<u8>) -> Checked {
        Checked {
            key: key.into(),
            due: SystemTime::now() + Duration::from_secs(3_600),
            absolute: false,
            callback: HttpCallback::new(Method::Post, url).body(body),
        }
    }

    fn store(dir: &tempfile::TempDir) -> DurableTimers {
        DurableTimers::builder()
            .embedded(dir.path().join("timers"))
            .build()
            .unwrap()
    }

    fn outcome(r: &Result<Added, DurableError>) -> String {
        match r {
            Ok(Added::Same(info)) => format!("same {}", info.key),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn a_key_twice_in_one_group_is_added_by_its_first_timer() {
        let dir = tempfile::tempdir().unwrap();
        let t = store(&dir);
        let url = "http://127.0.0.1:9/a";
        let group = [
            timer("k", url, b"1".to_vec()),
            timer("k", url, b"1".to_vec()),
            timer("k", url, b"2".to_vec()),
            timer("other", url, b"1".to_vec()),
        ];
        let answers: Vec<String> = add_requests(&t, &group).iter().map(outcome).collect();
        assert_eq!(
            answers,
            ["Ok(Created)", "same k", "Ok(Different)", "Ok(Created)"]
        );
        let stored = t.get("k").unwrap().unwrap();
        assert_eq!(
            HttpCallback::from_payload(&stored.payload),
            Some(group[0].callback.clone())
        );
        t.shutdown().unwrap();
    }

    #[test]
    fn a_refused_timer_fails_alone_and_the_others_are_added() {
        let dir = tempfile::tempdir().unwrap();
        let t = store(&dir);
        let url = "http://127.0.0.1:9/a";
        let group = [
            timer("a", url, Vec::new()),
            timer("huge", url, vec![b'x'; DEFAULT_MAX_PAYLOAD + 1]),
            timer("c", url, Vec::new()),
        ];
        let answers = add_requests(&t, &group);
        assert!(matches!(answers[0], Ok(Added::Created)));
        assert!(
            matches!(answers[1], Err(DurableError::PayloadTooLarge { .. })),
            "{:?}",
            answers[1]
        );
        assert!(matches!(answers[2], Ok(Added::Created)));
        assert!(t.get("huge").unwrap().is_none());
        // A batch request is all or nothing on input: nothing was added.
        let batch = [timer("d", url, Vec::new()), group[1].clone()];
        assert!(matches!(
            add_group(&t, &batch),
            Err((None, DurableError::PayloadTooLarge { .. }))
        ));
        assert!(t.get("d").unwrap().is_none());
        t.shutdown().unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_requests_get_their_own_answers() {
        let dir = tempfile::tempdir().unwrap();
        let t = Arc::new(store(&dir));
        let adder = Arc::new(Adder::start(t.clone()));
        let url = "http://127.0.0.1:9/a";
        let tasks: Vec<_> = (0..200)
            .map(|i| {
                let adder = adder.clone();
                // Ten timers under each key, one of them different.
                let body = if i % 10 == 9 {
                    b"x".to_vec()
                } else {
                    Vec::new()
                };
                let c = timer(&format!("k{}", i / 10), url, body);
                tokio::spawn(async move { adder.add(c).await.unwrap() })
            })
            .collect();
        let mut counts = [0; 3];
        for task in tasks {
            match task.await.unwrap().unwrap() {
                Added::Created => counts[0] += 1,
                Added::Same(_) => counts[1] += 1,
                Added::Different => counts[2] += 1,
                Added::Churning => panic!("nothing ends here"),
            }
        }
        assert_eq!(counts[0], 20, "{counts:?}");
        assert_eq!(counts[0] + counts[1] + counts[2], 200);
        assert!(counts[2] >= 20, "{counts:?}");
        assert_eq!(t.stats().pending, 20);
    }
}
