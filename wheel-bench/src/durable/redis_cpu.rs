//! The Redis server's CPU over a run, from `INFO cpu`: `used_cpu_sys` +
//! `used_cpu_user` (every thread of the server) and, when the server
//! reports them (Redis 6.2 and later), `used_cpu_sys_main_thread` +
//! `used_cpu_user_main_thread` (the thread that runs every command).
//!
//! A [`Sampler`] thread reads them every few tens of milliseconds while a
//! run goes on, so that the share can be taken over the part of the run
//! that matters (the firing, not the adding before it): [`share`] gives
//! the CPU seconds per second between the samples around that part. A
//! share near 1.0 on the main thread means Redis's core is the bound.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use super::unix_ns;

/// CPU seconds the server has used so far.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuTotals {
    /// System + user, every thread.
    pub server: f64,
    /// System + user of the main thread, when reported.
    pub main: Option<f64>,
}

/// The totals in the text of `INFO cpu` (`None` without `used_cpu_sys`
/// and `used_cpu_user`).
pub fn parse_info_cpu(info: &str) -> Option<CpuTotals> {
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.trim().strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse::<f64>().ok())
    };
    let server = field("used_cpu_sys")? + field("used_cpu_user")?;
    let main = match (
        field("used_cpu_sys_main_thread"),
        field("used_cpu_user_main_thread"),
    ) {
        (Some(s), Some(u)) => Some(s + u),
        _ => None,
    };
    Some(CpuTotals { server, main })
}

/// Reads the totals over `conn`.
pub fn read(conn: &mut redis::Connection) -> Result<CpuTotals, String> {
    let info: String = redis::cmd("INFO")
        .arg("cpu")
        .query(conn)
        .map_err(|e| e.to_string())?;
    parse_info_cpu(&info).ok_or_else(|| "no used_cpu_sys/used_cpu_user in INFO cpu".into())
}

/// The totals at one instant (ns since the epoch).
pub type Sample = (i64, CpuTotals);

/// Redis's share of a core over part of a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RedisCpu {
    /// CPU seconds per second, every thread.
    pub cores: f64,
    /// The same for the main thread, when reported.
    pub main: Option<f64>,
}

impl RedisCpu {
    /// "0.93 core", with the main thread's share when it differs.
    pub fn cell(&self) -> String {
        let all = format!("{:.2} core", self.cores);
        match self.main {
            Some(m) if format!("{m:.2}") != format!("{:.2}", self.cores) => {
                format!("{all} (main {m:.2})")
            }
            _ => all,
        }
    }
}

/// The share between the last sample at or before `from` and the first at
/// or after `to` (ns since the epoch; the first and last samples when none
/// is that far out). `None` with fewer than two samples or no time between
/// them.
pub fn share(samples: &[Sample], from: i64, to: i64) -> Option<RedisCpu> {
    let a = samples
        .iter()
        .rev()
        .find(|(t, _)| *t <= from)
        .or(samples.first())?;
    let b = samples.iter().find(|(t, _)| *t >= to).or(samples.last())?;
    let secs = (b.0 - a.0) as f64 / 1e9;
    if secs <= 0.0 {
        return None;
    }
    let main = match (a.1.main, b.1.main) {
        (Some(x), Some(y)) => Some((y - x) / secs),
        _ => None,
    };
    Some(RedisCpu {
        cores: (b.1.server - a.1.server) / secs,
        main,
    })
}

/// How often a [`Sampler`] reads `INFO cpu`.
pub const EVERY: Duration = Duration::from_millis(50);

/// A thread reading the server's CPU totals every [`EVERY`] until
/// [`finish`](Sampler::finish) (or until dropped, when a run fails).
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Vec<Sample>>>,
}

impl Sampler {
    /// Starts sampling the server at `url` (one sample before returning).
    pub fn start(url: &str) -> Result<Sampler, String> {
        let mut conn = redis::Client::open(url)
            .and_then(|c| c.get_connection())
            .map_err(|e| e.to_string())?;
        let first = (unix_ns(SystemTime::now()), read(&mut conn)?);
        let stop = Arc::new(AtomicBool::new(false));
        let handle = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut samples = vec![first];
                loop {
                    let last = stop.load(Ordering::Relaxed);
                    std::thread::sleep(if last { Duration::ZERO } else { EVERY });
                    match read(&mut conn) {
                        Ok(t) => samples.push((unix_ns(SystemTime::now()), t)),
                        Err(_) => break,
                    }
                    if last {
                        break;
                    }
                }
                samples
            })
        };
        Ok(Sampler {
            stop,
            handle: Some(handle),
        })
    }

    /// Takes a last sample and returns them all, oldest first.
    pub fn finish(mut self) -> Vec<Sample> {
        self.stop.store(true, Ordering::Relaxed);
        let handle = self.handle.take();
        handle.map_or_else(Vec::new, |h| h.join().unwrap_or_default())
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_cpu_gives_server_and_main_thread_totals() {
        let info = "# CPU\r\nused_cpu_sys:1.500000\r\nused_cpu_user:2.250000\r\n\
                    used_cpu_sys_children:9.0\r\nused_cpu_user_children:9.0\r\n\
                    used_cpu_sys_main_thread:1.000000\r\nused_cpu_user_main_thread:2.000000\r\n";
        assert_eq!(
            parse_info_cpu(info),
            Some(CpuTotals {
                server: 3.75,
                main: Some(3.0)
            })
        );
        let old = "used_cpu_sys:1\nused_cpu_user:2\n";
        assert_eq!(
            parse_info_cpu(old),
            Some(CpuTotals {
                server: 3.0,
                main: None
            })
        );
        assert_eq!(parse_info_cpu("used_cpu_sys:1\n"), None);
    }

    #[test]
    fn the_share_is_taken_between_the_samples_around_the_window() {
        let at = |t: i64, s: f64| {
            (
                t * 1_000_000_000,
                CpuTotals {
                    server: s,
                    main: Some(s / 2.0),
                },
            )
        };
        let samples = [at(0, 0.0), at(1, 0.1), at(2, 1.0), at(3, 1.9), at(4, 2.0)];
        let c = share(&samples, 1_000_000_000, 3_000_000_000).unwrap();
        assert!((c.cores - 0.9).abs() < 1e-9);
        assert!((c.main.unwrap() - 0.45).abs() < 1e-9);
        assert_eq!(c.cell(), "0.90 core (main 0.45)");
        let whole = share(&samples, -5, 99_000_000_000).unwrap();
        assert!((whole.cores - 0.5).abs() < 1e-9);
        assert_eq!(share(&samples[..1], 0, 1), None);
        let same = RedisCpu {
            cores: 0.934,
            main: Some(0.931),
        };
        assert_eq!(same.cell(), "0.93 core");
    }
}
