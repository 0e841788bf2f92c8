//! Another process's memory and CPU from `/proc`, for the idle server:
//! its resident set (`VmRSS` of `/proc/<pid>/status`) and its user +
//! system time (`/proc/<pid>/stat`, which counts the threads that have
//! exited too: a server's idle blocking threads exit after a while, and
//! a per-thread sum would lose their time).
//!
//! The CPU time is in clock ticks of 10 ms, so a 5 s window reads to
//! 0.2 % of a core.

use std::time::{Duration, Instant};

use crate::cpu::parse_stat_cpu;

/// `VmRSS` in bytes from the text of `/proc/<pid>/status`.
pub fn parse_vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let mut parts = line["VmRSS:".len()..].split_whitespace();
    let n: u64 = parts.next()?.parse().ok()?;
    match parts.next()? {
        "kB" => n.checked_mul(1024),
        _ => None,
    }
}

/// The resident set of process `pid`, bytes.
pub fn rss_bytes(pid: u32) -> Option<u64> {
    parse_vm_rss(&std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?)
}

/// User + system time of process `pid` so far.
pub fn cpu_time(pid: u32) -> Option<Duration> {
    parse_stat_cpu(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// A process's idle figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Idle {
    /// Resident set at the end of the window, bytes.
    pub rss: u64,
    /// CPU used over the window, as a share of one core (0.01 = 1 %).
    pub cpu: f64,
    /// The window.
    pub window: Duration,
}

/// The share of one core that `used` of CPU over `wall` is.
pub fn core_share(used: Duration, wall: Duration) -> f64 {
    if wall.is_zero() {
        0.0
    } else {
        used.as_secs_f64() / wall.as_secs_f64()
    }
}

/// Watches `pid` for `window` doing nothing else: its CPU over the
/// window and its resident set at the end.
pub fn idle(pid: u32, window: Duration) -> Result<Idle, String> {
    let gone = || format!("process {pid} is gone (or /proc is unreadable)");
    let before = cpu_time(pid).ok_or_else(gone)?;
    let start = Instant::now();
    std::thread::sleep(window);
    let after = cpu_time(pid).ok_or_else(gone)?;
    let wall = start.elapsed();
    let rss = rss_bytes(pid).ok_or_else(gone)?;
    Ok(Idle {
        rss,
        cpu: core_share(after.saturating_sub(before), wall),
        window: wall,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vm_rss_is_read_in_bytes() {
        let status =
            "Name:\twheel-server\nVmPeak:\t  900000 kB\nVmRSS:\t   14336 kB\nThreads:\t5\n";
        assert_eq!(parse_vm_rss(status), Some(14_336 * 1024));
        assert_eq!(parse_vm_rss("Name:\tx\n"), None);
        assert_eq!(parse_vm_rss("VmRSS:\t12 MB\n"), None);
        assert_eq!(parse_vm_rss("VmRSS:\tlots kB\n"), None);
        assert_eq!(parse_vm_rss("VmRSS:\n"), None);
    }

    #[test]
    fn this_process_reads_back() {
        let me = std::process::id();
        assert!(rss_bytes(me).is_some_and(|b| b > 0));
        assert!(cpu_time(me).is_some());
        assert_eq!(rss_bytes(u32::MAX), None);
    }

    #[test]
    fn shares_of_a_core() {
        let s = core_share(Duration::from_millis(50), Duration::from_secs(5));
        assert!((s - 0.01).abs() < 1e-12);
        assert_eq!(core_share(Duration::from_millis(5), Duration::ZERO), 0.0);
    }
}
