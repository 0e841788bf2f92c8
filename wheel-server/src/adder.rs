//! Adding timers idempotently, and in groups.
//!
//! Adding is idempotent on the key: the add is the library's atomic
//! add-or-get, so of concurrent requests for one key, on any servers,
//! exactly one creates the timer (201). Every other request for that key
//! gets the existing timer from the same call and compares: the same
//! content answers 200 with the existing timer, different content 409.
//! The same content means the same callback (method, URL, headers, body)
//! and, when the request gives `due_at`, the same first due time to the
//! millisecond; a `delay` is relative to the moment of the request, so it
//! is not compared. A key is free again once its timer has fired
//! successfully or was cancelled, unless the server runs with a dedup
//! window (`--dedup-window`): within it, a request for the key adds
//! nothing and answers 200 with how and when the timer ended, whatever
//! its content (the store remembers only the outcome, not the content).
//!
//! Requests that add one timer each do not make a store call each. They
//! queue their timer with the [`Adder`], whose task takes everything
//! queued and adds it with one `add_callbacks_or_get` call, at most
//! [`GROUPS_IN_FLIGHT`] calls at a time; timers that come while those run
//! make the next group. The answer is the same as one call per request
//! would give (each request still waits until its own timer is durable),
//! but a loaded server makes one store call per group instead of per
//! request. An idle server's single request goes alone, at once.
//!
//! Within a group, a key that comes twice is added by its first request;
//! the second gets that timer and compares, as it would have after the
//! first request's own call. A bad timer in a group (an input error) does
//! not fail the others: nothing was written, and the group is added one
//! timer at a time instead, each with its own answer. A store error fails
//! the whole group, each request with that error.
//!
//! This module depends on the checked request ([`Checked`]) only.

use std::sync::Arc;
use std::time::SystemTime;

use tokio::sync::{Semaphore, mpsc, oneshot};
use wheel_durable::http::HttpCallback;
use wheel_durable::{AddOrGet, AsyncTimers, DurableError, EndedTimer, TimerInfo};

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
    /// A timer with this key ended within the dedup window.
    Ended(EndedTimer),
    /// Timers under this key kept ending between the add and the read.
    Churning,
}

/// Whether the stored timer `info` has the content the request `c` asks for.
fn same_content(info: &TimerInfo, c: &Checked) -> bool {
    info.callback().as_ref() == Some(&c.callback) && (!c.absolute || info.first_due == c.due)
}

/// What the library's answer for `c` means for its request.
fn judge(c: &Checked, answer: AddOrGet) -> Added {
    match answer {
        AddOrGet::Added => Added::Created,
        AddOrGet::Existing(info) if same_content(&info, c) => Added::Same(info),
        AddOrGet::Existing(_) => Added::Different,
        AddOrGet::Ended(e) => Added::Ended(e),
        // `Churning`, and whatever else a later library says was not added.
        _ => Added::Churning,
    }
}

/// Adds every timer of `group` unless its key exists, with one store call
/// for all of them: one answer per timer, in order. An error about input
/// (a timer the store refuses) comes before anything is written.
pub(crate) async fn add_group(
    t: &AsyncTimers,
    group: &[Checked],
) -> Result<Vec<Added>, DurableError> {
    let entries: Vec<(&str, SystemTime, &HttpCallback)> = group
        .iter()
        .map(|c| (c.key.as_str(), c.due, &c.callback))
        .collect();
    let answers = t.add_callbacks_or_get(&entries).await?;
    Ok(group
        .iter()
        .zip(answers)
        .map(|(c, answer)| judge(c, answer))
        .collect())
}

/// [`add_group`] for requests of one timer each: every timer gets its own
/// answer. When one timer is refused, nothing was written, and each is
/// added on its own instead (so one bad request fails alone); a store
/// error fails them all.
async fn add_requests(t: &AsyncTimers, group: &[Checked]) -> Vec<Result<Added, DurableError>> {
    match add_group(t, group).await {
        Ok(answers) => answers.into_iter().map(Ok).collect(),
        Err(e) if group.len() > 1 && e.is_input() => {
            let mut answers = Vec::with_capacity(group.len());
            for c in group {
                let one = add_group(t, std::slice::from_ref(c)).await;
                answers.push(one.map(|mut a| a.pop().unwrap_or(Added::Churning)));
            }
            answers
        }
        Err(e) => group.iter().map(|_| Err(e.clone())).collect(),
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
    pub(crate) fn start(timers: AsyncTimers) -> Adder {
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
/// call is free, and adds it in a task of its own.
async fn gather(timers: AsyncTimers, mut waiting: mpsc::UnboundedReceiver<Queued>) {
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
        tokio::spawn(async move {
            let (group, answers): (Vec<Checked>, Vec<_>) =
                queued.into_iter().map(|q| (q.timer, q.answer)).unzip();
            let results = add_requests(&timers, &group).await;
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
    use wheel_durable::{DEFAULT_MAX_PAYLOAD, DurableTimers};

    use super::*;

    fn timer(key: &str, url: &str, body: Vec<u8>) -> Checked {
        Checked {
            key: key.into(),
            due: SystemTime::now() + Duration::from_secs(3_600),
            absolute: false,
            callback: HttpCallback::new(Method::Post, url).body(body),
        }
    }

    fn store(dir: &tempfile::TempDir) -> AsyncTimers {
        let t = DurableTimers::builder()
            .embedded(dir.path().join("timers"))
            .build()
            .unwrap();
        AsyncTimers::new(Arc::new(t))
    }

    fn outcome(r: &Result<Added, DurableError>) -> String {
        match r {
            Ok(Added::Same(info)) => format!("same {}", info.key),
            other => format!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn a_key_twice_in_one_group_is_added_by_its_first_timer() {
        let dir = tempfile::tempdir().unwrap();
        let t = store(&dir);
        let url = "http://127.0.0.1:9/a";
        let group = [
            timer("k", url, b"1".to_vec()),
            timer("k", url, b"1".to_vec()),
            timer("k", url, b"2".to_vec()),
            timer("other", url, b"1".to_vec()),
        ];
        let answers: Vec<String> = add_requests(&t, &group).await.iter().map(outcome).collect();
        assert_eq!(
            answers,
            ["Ok(Created)", "same k", "Ok(Different)", "Ok(Created)"]
        );
        let stored = t.get("k").await.unwrap().unwrap();
        assert_eq!(stored.callback(), Some(group[0].callback.clone()));
    }

    #[tokio::test]
    async fn a_refused_timer_fails_alone_and_the_others_are_added() {
        let dir = tempfile::tempdir().unwrap();
        let t = store(&dir);
        let url = "http://127.0.0.1:9/a";
        let group = [
            timer("a", url, Vec::new()),
            timer("huge", url, vec![b'x'; DEFAULT_MAX_PAYLOAD + 1]),
            timer("c", url, Vec::new()),
        ];
        let answers = add_requests(&t, &group).await;
        assert!(matches!(answers[0], Ok(Added::Created)));
        assert!(
            matches!(answers[1], Err(DurableError::PayloadTooLarge { .. })),
            "{:?}",
            answers[1]
        );
        assert!(matches!(answers[2], Ok(Added::Created)));
        assert!(t.get("huge").await.unwrap().is_none());
        // A batch request is all or nothing on input: nothing was added.
        let batch = [timer("d", url, Vec::new()), group[1].clone()];
        assert!(matches!(
            add_group(&t, &batch).await,
            Err(DurableError::PayloadTooLarge { .. })
        ));
        assert!(t.get("d").await.unwrap().is_none());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_requests_get_their_own_answers() {
        let dir = tempfile::tempdir().unwrap();
        let t = store(&dir);
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
                Added::Churning | Added::Ended(_) => panic!("nothing ends here"),
            }
        }
        assert_eq!(counts[0], 20, "{counts:?}");
        assert_eq!(counts[0] + counts[1] + counts[2], 200);
        assert!(counts[2] >= 20, "{counts:?}");
        // Unknown until the first read of the counts has finished (each
        // call waits up to 25 ms for it).
        let mut pending = None;
        for _ in 0..2_000 {
            pending = t.stats().await.pending;
            if pending.is_some() {
                break;
            }
        }
        assert_eq!(pending, Some(20));
    }
}
