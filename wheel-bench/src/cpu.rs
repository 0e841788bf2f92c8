//! Process CPU time from `/proc`, without `libc` or `unsafe`.
//!
//! Two sources:
//! - `/proc/self/stat` (user + system of every thread, exited ones included), in
//!   clock ticks of 10 ms: coarse but complete;
//! - `/proc/self/task/*/schedstat` (time on CPU per live thread, in ns): precise,
//!   but a thread that exits takes its time with it, so a measured window must
//!   not see threads exit, or they must report their own time before exiting
//!   ([`thread_cpu`]). [`CpuSample`] uses it when the kernel provides it and falls
//!   back to the ticks otherwise.

use std::time::{Duration, Instant};

/// The kernel's `USER_HZ`: the unit of `utime`/`stime` in `/proc/<pid>/stat`.
/// Fixed at 100 on every Linux architecture the kernel exports it for.
pub const CLOCK_TICKS_PER_SEC: u64 = 100;

/// User + system CPU time of this process so far, or `None` when `/proc` is
/// unavailable (not Linux).
pub fn process_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    parse_stat_cpu(&stat)
}

/// Extract utime + stime from the text of `/proc/<pid>/stat`. The command name
/// (field 2) is in parentheses and may contain spaces, so fields are counted from
/// the last `)`.
pub fn parse_stat_cpu(stat: &str) -> Option<Duration> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    // After ")": field 3 (state) is index 0, so utime (field 14) is index 11.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    let ticks = utime + stime;
    Some(Duration::from_millis(ticks * 1000 / CLOCK_TICKS_PER_SEC))
}

/// Time on CPU of the calling thread (`/proc/thread-self/schedstat`), in ns
/// resolution, or `None` if unavailable.
pub fn thread_cpu() -> Option<Duration> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    parse_schedstat(&s)
}

/// The first field of a `schedstat` line: ns on CPU.
pub fn parse_schedstat(s: &str) -> Option<Duration> {
    Some(Duration::from_nanos(
        s.split_whitespace().next()?.parse().ok()?,
    ))
}

/// Sum of the time on CPU of every live thread of this process.
pub fn live_threads_cpu() -> Option<Duration> {
    let mut total = Duration::ZERO;
    let mut any = false;
    for entry in std::fs::read_dir("/proc/self/task").ok()? {
        let Ok(entry) = entry else { continue };
        // A thread may exit between listing and reading: skip it.
        if let Ok(s) = std::fs::read_to_string(entry.path().join("schedstat")) {
            if let Some(d) = parse_schedstat(&s) {
                total += d;
                any = true;
            }
        }
    }
    // All zeros means the kernel does not account per-thread time.
    (any && !total.is_zero()).then_some(total)
}

/// A reading of both CPU sources.
#[derive(Debug, Clone, Copy)]
pub struct CpuSample {
    threads: Option<Duration>,
    ticks: Option<Duration>,
}

impl CpuSample {
    /// Read both sources now.
    pub fn now() -> CpuSample {
        CpuSample {
            threads: live_threads_cpu(),
            ticks: process_cpu(),
        }
    }

    /// CPU used since `earlier`: the precise per-thread sum plus `exited` (the
    /// self-reported time of threads that started and exited in between), or,
    /// without per-thread accounting, the tick count. `None` without `/proc`.
    pub fn since(&self, earlier: &CpuSample, exited: Duration) -> Option<Duration> {
        match (earlier.threads, self.threads) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a) + exited),
            _ => Some(self.ticks?.saturating_sub(earlier.ticks?)),
        }
    }
}

/// Wait until the process has been (nearly) idle for one `window`: used after a
/// burst so that background threads (a timer thread draining its queue) finish
/// the work the burst caused. Returns when a window used at most one clock tick
/// of CPU, or after `max_wait`.
pub fn wait_until_quiet(window: Duration, max_wait: Duration) {
    let start = Instant::now();
    let tick = Duration::from_millis(1000 / CLOCK_TICKS_PER_SEC);
    let Some(mut last) = process_cpu() else {
        std::thread::sleep(window);
        return;
    };
    while start.elapsed() < max_wait {
        std::thread::sleep(window);
        let Some(now) = process_cpu() else { return };
        if now.saturating_sub(last) <= tick {
            return;
        }
        last = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_fields_after_a_name_with_spaces() {
        let line = "1234 (a b) c) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 1 0";
        assert_eq!(parse_stat_cpu(line), Some(Duration::from_millis(3000)));
    }

    #[test]
    fn parses_schedstat() {
        assert_eq!(
            parse_schedstat("228589251 162061727 72\n"),
            Some(Duration::from_nanos(228_589_251))
        );
        assert_eq!(parse_schedstat(""), None);
    }

    #[test]
    fn precise_sample_sees_a_busy_thread() {
        // Spin until this thread's own CPU time (not wall time, which a
        // loaded machine stretches) has grown by 50 ms, then check that the
        // process-wide sample saw at least that much.
        let thread_cpu = || {
            std::fs::read_to_string("/proc/thread-self/schedstat")
                .ok()
                .and_then(|s| parse_schedstat(&s))
        };
        let a = CpuSample::now();
        let Some(start) = thread_cpu() else {
            panic!("/proc/thread-self/schedstat is unreadable");
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut x = 0u64;
        while thread_cpu().is_some_and(|t| t < start + Duration::from_millis(50)) {
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_add(1));
            }
            assert!(Instant::now() < deadline, "thread got no CPU for 30 s");
        }
        let used = CpuSample::now().since(&a, Duration::ZERO).unwrap();
        // The tick-based fallback has 10 ms granularity.
        assert!(used >= Duration::from_millis(40), "{used:?}");
    }

    #[test]
    fn reads_our_own_process() {
        let a = process_cpu().expect("/proc/self/stat");
        let mut x = 0u64;
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(50) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        assert!(process_cpu().unwrap() >= a);
    }
}
