//! One server on the embedded store, in this order: idle when fresh (its
//! resident set and CPU), 64 keep-alive connections adding one timer per
//! request, connections posting batches of 1 000 timers, idle again while
//! holding every timer added (all an hour out, so nothing fires); then,
//! with the server stopped, the library adding as many timers as the
//! server took from 64 threads on an embedded store of its own (the same
//! callback, encoded the same way: `add_callback_at`), for the ratio.
//!
//! A load's check: every completed request got the status of success (201
//! for one timer, 200 for a batch), wrk saw no errors, and the store's
//! pending count (`/metrics`) holds at least every timer those requests
//! added (requests still in flight when wrk stopped may add more).

use std::time::{Duration, Instant, SystemTime};

use wheel_durable::DurableTimers;
use wheel_durable::http::{HttpCallback, HttpConfig, Method};

use super::process::{Backend, ServerProcess};
use super::procfs::{self, Idle};
use super::wrk::{self, Load, WrkResult};
use super::{NEVER_CALLED, Workdir, client};
use crate::durable::throughput::thread_key;
use crate::durable::whole_ms;
use crate::workloads::Check;

/// The sizes of the single-server runs.
#[derive(Debug, Clone)]
pub struct LoadParams {
    /// Connections of the one-timer load.
    pub connections: usize,
    /// wrk threads of both loads.
    pub wrk_threads: usize,
    /// How long each load runs.
    pub load_for: Duration,
    /// Timers per batch request.
    pub batch: usize,
    /// Connections of the batch load.
    pub batch_connections: usize,
    /// Threads of the library's adds.
    pub library_threads: usize,
    /// How long the server is left alone before an idle window.
    pub settle: Duration,
    /// The idle window.
    pub idle_for: Duration,
}

/// One load's figures.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// wrk's figures.
    pub wrk: WrkResult,
    /// Timers per request.
    pub per_request: usize,
    /// Timers the store gained over the load (pending before and after).
    pub stored: Option<u64>,
}

impl Loaded {
    /// Timers added per second by the requests that succeeded.
    pub fn timers_per_sec(&self) -> f64 {
        if self.wrk.duration_us == 0 {
            return 0.0;
        }
        (self.wrk.expected * self.per_request as u64) as f64 * 1e6 / self.wrk.duration_us as f64
    }

    /// Timers the succeeding requests added.
    pub fn timers(&self) -> u64 {
        self.wrk.expected * self.per_request as u64
    }

    /// The check described in the module's documentation.
    pub fn check(&self) -> Check {
        let w = &self.wrk;
        let short = match self.stored {
            Some(s) => self.timers().saturating_sub(s),
            None => return Check::Failed("the store's pending count was not read".into()),
        };
        Check::from_errors(&[
            ("wrk errors", w.error_count()),
            ("other statuses", w.requests.saturating_sub(w.expected)),
            ("timers not in the store", short),
        ])
    }
}

/// The library's adds.
#[derive(Debug, Clone, Copy)]
pub struct LibraryAdds {
    /// Timers added.
    pub timers: u64,
    /// Threads.
    pub threads: usize,
    /// Timers per second.
    pub per_sec: f64,
}

/// Everything one server run measured; each part may have failed alone.
#[derive(Debug)]
pub struct SingleServer {
    /// Idle, fresh.
    pub idle_fresh: Result<Idle, String>,
    /// One timer per request (`None`: no wrk).
    pub adds: Result<Option<Loaded>, String>,
    /// Batches (`None`: no wrk).
    pub batches: Result<Option<Loaded>, String>,
    /// Idle after the loads, and the timers then pending.
    pub idle_loaded: Result<(Idle, u64), String>,
    /// Whether the server exited cleanly on SIGTERM at the end.
    pub stopped_cleanly: bool,
    /// The library's adds, as many as the one-timer load made.
    pub library: Result<Option<LibraryAdds>, String>,
}

/// The store's pending count once it reaches `at_least`, or the last
/// count read within 5 s (the count may lag a moment behind the adds).
fn pending_at_least(s: &ServerProcess, at_least: u64) -> Result<u64, String> {
    let start = Instant::now();
    loop {
        let n = client::pending(s.addr());
        match n {
            Ok(n) if n >= at_least => return Ok(n),
            Ok(n) if start.elapsed() > Duration::from_secs(5) => return Ok(n),
            Err(e) if start.elapsed() > Duration::from_secs(5) => return Err(e),
            _ => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// Runs one wrk load with `script`, and the store's gain over it.
fn load(
    s: &ServerProcess,
    dir: &Workdir,
    l: &Load,
    script: &str,
    per_request: usize,
) -> Result<Loaded, String> {
    let before = pending_at_least(s, 0)?;
    let url = format!("http://{}", s.addr());
    let wrk = wrk::run(l, script, dir.path(), &url)?;
    let expect = before + wrk.expected * per_request as u64;
    let stored = pending_at_least(s, expect).ok().map(|n| n - before.min(n));
    Ok(Loaded {
        wrk,
        per_request,
        stored,
    })
}

/// The server's idle figures for `pid`, after leaving it alone.
fn idle(s: &ServerProcess, p: &LoadParams) -> Result<Idle, String> {
    std::thread::sleep(p.settle);
    let pid = s.pid().ok_or("the server is not running")?;
    procfs::idle(pid, p.idle_for)
}

/// The whole run with the server binary `bin`; the loads only when `wrk`
/// runs.
pub fn run(bin: &std::path::Path, p: &LoadParams, with_wrk: bool) -> Result<SingleServer, String> {
    let dir = Workdir::new("server-load")?;
    let backend = Backend::Embedded(dir.join("data"));
    let server = ServerProcess::start(bin, &backend, &dir.join("server.log"))?;
    let idle_fresh = idle(&server, p);
    let (adds, batches) = if with_wrk {
        let l = Load {
            threads: p.wrk_threads,
            connections: p.connections,
            duration: p.load_for,
        };
        let adds = load(&server, &dir, &l, &wrk::add_script(NEVER_CALLED), 1);
        let l = Load {
            connections: p.batch_connections,
            ..l
        };
        let script = wrk::batch_script(p.batch, NEVER_CALLED);
        let batches = load(&server, &dir, &l, &script, p.batch);
        (adds.map(Some), batches.map(Some))
    } else {
        (Ok(None), Ok(None))
    };
    let idle_loaded = idle(&server, p).and_then(|i| Ok((i, pending_at_least(&server, 0)?)));
    let stopped_cleanly = server.stop(Duration::from_secs(30));
    let library = match &adds {
        Ok(Some(a)) if a.wrk.expected > 0 => {
            library_adds(a.wrk.expected, p.library_threads, &dir).map(Some)
        }
        _ => Ok(None),
    };
    Ok(SingleServer {
        idle_fresh,
        adds,
        batches,
        idle_loaded,
        stopped_cleanly,
        library,
    })
}

/// `n` timers added by the library from `threads` threads with
/// `add_callback_at`, an hour out, on an embedded store in `dir`.
pub fn library_adds(n: u64, threads: usize, dir: &Workdir) -> Result<LibraryAdds, String> {
    let t = DurableTimers::builder()
        .embedded(dir.join("library"))
        .http(HttpConfig::new())
        .build()
        .map_err(|e| e.to_string())?;
    let cb = HttpCallback::new(Method::Post, NEVER_CALLED);
    let due = whole_ms(SystemTime::now() + Duration::from_secs(3_600));
    let threads = threads.clamp(1, 100);
    let start = Instant::now();
    let added = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let (t, cb) = (&t, &cb);
                // The first n % threads threads add one more.
                let share = n / threads as u64 + u64::from((i as u64) < n % threads as u64);
                s.spawn(move || -> Result<u64, String> {
                    for k in 0..share {
                        t.add_callback_at(&thread_key('l', i, k), due, cb)
                            .map_err(|e| e.to_string())?;
                    }
                    Ok(share)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| "an adding thread panicked".to_string())?
            })
            .sum::<Result<u64, String>>()
    });
    let elapsed = start.elapsed();
    t.shutdown().map_err(|e| e.to_string())?;
    let timers = added?;
    Ok(LibraryAdds {
        timers,
        threads,
        per_sec: timers as f64 / elapsed.as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loaded(requests: u64, expected: u64, errors: u64, stored: Option<u64>) -> Loaded {
        Loaded {
            wrk: WrkResult {
                requests,
                expected,
                duration_us: 2_000_000,
                errors: [0, errors, 0, 0, 0],
                ..WrkResult::default()
            },
            per_request: 10,
            stored,
        }
    }

    #[test]
    fn a_load_counts_timers_and_checks_the_store() {
        let ok = loaded(100, 100, 0, Some(1_003));
        assert_eq!((ok.timers(), ok.timers_per_sec()), (1_000, 500.0));
        assert_eq!(ok.check(), Check::Passed);
        let short = loaded(100, 100, 0, Some(990)).check().label();
        assert!(short.contains("10 timers not in the store"), "{short}");
        let statuses = loaded(100, 98, 1, Some(1_000)).check().label();
        assert!(statuses.contains("2 other statuses") && statuses.contains("1 wrk errors"));
        assert!(loaded(1, 1, 0, None).check().label().starts_with("FAILED"));
    }

    #[test]
    fn the_library_adds_every_timer_asked_for() {
        let dir = Workdir::new("server-library-test").unwrap();
        let r = library_adds(10, 3, &dir).unwrap();
        assert_eq!((r.timers, r.threads), (10, 3));
        let t = DurableTimers::builder()
            .embedded(dir.join("library"))
            .build()
            .unwrap();
        for (thread, count) in [(0, 4), (1, 3), (2, 3)] {
            for k in 0..count {
                assert!(t.get(&thread_key('l', thread, k)).unwrap().is_some());
            }
        }
        assert!(t.get(&thread_key('l', 1, 3)).unwrap().is_none());
        t.shutdown().unwrap();
    }
}
