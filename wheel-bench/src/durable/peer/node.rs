//! [`PeerNode`]: one process's ticker and task runners for the one-second
//! wheel.
//!
//! The ticker thread ticks every second from the node's start, at whatever
//! phase that gives (like a language's one-second ticker), takes the
//! second's tasks ([`SecondWheel::take`]) and hands each to the runners, a
//! fixed pool of threads that run the callback (standing in for a
//! goroutine or executor task per task). A failed take is skipped: its
//! second's tasks stay in Redis. Stopping ends the ticker, then the runners
//! finish the tasks already handed to them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use super::{SecondWheel, Task};

/// The callback run for each task.
pub type Run = Arc<dyn Fn(&Task) + Send + Sync>;

/// Told the size of every non-empty batch a tick took, before it runs.
pub type OnTake = Box<dyn Fn(usize) + Send>;

/// A running node.
pub struct PeerNode {
    stop: Arc<AtomicBool>,
    ticker: Option<JoinHandle<()>>,
    runners: Vec<JoinHandle<()>>,
}

impl PeerNode {
    /// Starts ticking on `wheel` with `runners` threads running `run`.
    pub fn start(
        wheel: Arc<SecondWheel>,
        runners: usize,
        run: Run,
        on_take: Option<OnTake>,
    ) -> PeerNode {
        let (tx, rx) = mpsc::channel::<Task>();
        let rx = Arc::new(Mutex::new(rx));
        let runners = (0..runners.max(1))
            .map(|_| {
                let (rx, run) = (rx.clone(), run.clone());
                std::thread::spawn(move || {
                    loop {
                        let next = rx.lock().unwrap().recv();
                        match next {
                            Ok(task) => run(&task),
                            Err(_) => break,
                        }
                    }
                })
            })
            .collect();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let ticker = std::thread::spawn(move || tick(&wheel, &flag, &tx, on_take));
        PeerNode {
            stop,
            ticker: Some(ticker),
            runners,
        }
    }

    /// Stops ticking and waits for the tasks already taken to run.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.ticker.take() {
            t.thread().unpark();
            let _ = t.join();
        }
        for r in self.runners.drain(..) {
            let _ = r.join();
        }
    }
}

impl Drop for PeerNode {
    fn drop(&mut self) {
        self.halt();
    }
}

/// The ticker: one take per second until stopped.
fn tick(wheel: &SecondWheel, stop: &AtomicBool, tx: &mpsc::Sender<Task>, on_take: Option<OnTake>) {
    let mut next = Instant::now() + Duration::from_secs(1);
    while !stop.load(Ordering::SeqCst) {
        let now = Instant::now();
        if now < next {
            std::thread::park_timeout(next - now);
            continue;
        }
        next += Duration::from_secs(1);
        let Ok(tasks) = wheel.take(SystemTime::now()) else {
            continue;
        };
        if tasks.is_empty() {
            continue;
        }
        if let Some(f) = &on_take {
            f(tasks.len());
        }
        for t in tasks {
            let _ = tx.send(t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::durable::PAYLOAD;
    use wheel_testkit::{RedisServer, ServerOptions};

    #[test]
    fn tasks_fire_once_up_to_two_seconds_early_and_removed_ones_never() {
        let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
            return;
        };
        let wheel = Arc::new(SecondWheel::open(&server.url(), "p").unwrap());
        let due = SystemTime::now() + Duration::from_millis(2_500);
        wheel.add("a", due, PAYLOAD).unwrap();
        wheel
            .add_many(&[("b".into(), due), ("c".into(), due)], PAYLOAD)
            .unwrap();
        wheel.remove("b", due).unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let run: Run = Arc::new(move |t: &Task| {
            log.lock().unwrap().push((t.key.clone(), SystemTime::now()));
        });
        let nodes: Vec<PeerNode> = (0..2)
            .map(|_| PeerNode::start(wheel.clone(), 2, run.clone(), None))
            .collect();
        let give_up = Instant::now() + Duration::from_secs(10);
        while seen.lock().unwrap().len() < 2 && Instant::now() < give_up {
            std::thread::sleep(Duration::from_millis(20));
        }
        nodes.into_iter().for_each(PeerNode::stop);
        let mut seen = seen.lock().unwrap().clone();
        seen.sort();
        let keys: Vec<&[u8]> = seen.iter().map(|(k, _)| k.as_slice()).collect();
        assert_eq!(keys, vec![&b"a"[..], b"c"]);
        for (_, at) in seen {
            let early = due.duration_since(at).unwrap_or_default();
            assert!(early < Duration::from_secs(3), "{early:?}");
        }
    }
}
