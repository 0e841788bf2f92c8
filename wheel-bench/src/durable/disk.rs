//! The disk's ceiling for durable adds: a raw file append made durable by
//! one `fdatasync` shared by every caller waiting at the time (group
//! commit), with nothing else around it. An embedded store whose `add`
//! returns only once the timer is on disk cannot beat this from the same
//! number of threads on the same disk, so the embedded `add` rate is shown
//! as a share of it.
//!
//! The group commit is the usual leader/follower scheme: a caller appends
//! its record to a shared buffer under a mutex and takes a ticket; if no
//! write is under way it becomes the leader, takes the whole buffer,
//! writes it and calls `fdatasync` without the lock, then marks every
//! ticket up to the last one in that buffer durable and wakes the rest.
//! A caller whose ticket is not durable yet and finds a leader at work
//! waits for it, and leads the next write if its record missed this one.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Bytes per appended record: about what a timer takes (16-byte key,
/// 8-byte due time, 32-byte payload, a length and a checksum).
pub const RECORD: usize = 64;

/// What the appender has done.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AppendStats {
    /// Records appended and made durable.
    pub appends: u64,
    /// `fdatasync` calls.
    pub syncs: u64,
    /// Bytes written.
    pub bytes: u64,
}

#[derive(Default)]
struct State {
    /// Records appended since the last write was taken.
    buf: Vec<u8>,
    /// Tickets handed out (the last caller's ticket).
    issued: u64,
    /// Every ticket up to this one is on disk.
    durable: u64,
    /// A leader is writing.
    writing: bool,
    /// The first write error, reported to every caller after it.
    failed: Option<String>,
    stats: AppendStats,
}

/// An append-only file whose appends return once they are on disk, one
/// `fdatasync` covering every caller waiting at the time.
pub struct GroupAppender {
    file: File,
    state: Mutex<State>,
    done: Condvar,
}

impl GroupAppender {
    /// Creates (or truncates) the file at `path`.
    pub fn create(path: &Path) -> std::io::Result<GroupAppender> {
        Ok(GroupAppender {
            file: File::create(path)?,
            state: Mutex::new(State::default()),
            done: Condvar::new(),
        })
    }

    /// Appends `record` and returns once it is on disk.
    pub fn append(&self, record: &[u8]) -> Result<(), String> {
        let mut s = self.state.lock().expect("appender lock");
        s.buf.extend_from_slice(record);
        s.issued += 1;
        let ticket = s.issued;
        loop {
            if let Some(e) = &s.failed {
                return Err(e.clone());
            }
            if s.durable >= ticket {
                return Ok(());
            }
            if s.writing {
                s = self.done.wait(s).expect("appender lock");
                continue;
            }
            s.writing = true;
            let batch = std::mem::take(&mut s.buf);
            let last = s.issued;
            drop(s);
            let written = self.write_and_sync(&batch);
            s = self.state.lock().expect("appender lock");
            s.writing = false;
            match written {
                Ok(()) => {
                    s.stats.appends += last - s.durable;
                    s.stats.syncs += 1;
                    s.stats.bytes += batch.len() as u64;
                    s.durable = last;
                }
                Err(e) => s.failed = Some(e.to_string()),
            }
            self.done.notify_all();
        }
    }

    fn write_and_sync(&self, batch: &[u8]) -> std::io::Result<()> {
        (&self.file).write_all(batch)?;
        self.file.sync_data()
    }

    /// What it has done so far.
    pub fn stats(&self) -> AppendStats {
        self.state.lock().expect("appender lock").stats
    }
}

/// One measurement of durable appends.
#[derive(Debug, Clone, Copy)]
pub struct AppendRate {
    /// Durable appends per second over all threads.
    pub per_sec: f64,
    /// Appends per `fdatasync` (the group size).
    pub per_sync: f64,
}

/// A fresh path for the raw append file under the temporary directory.
fn temp_path() -> PathBuf {
    super::temp_store("disk").with_extension("log")
}

/// Durable appends per second from `threads` threads appending
/// [`RECORD`]-byte records for `d` to a fresh file under the temporary
/// directory (removed afterwards).
pub fn append_rate(threads: usize, d: Duration) -> Result<AppendRate, String> {
    let path = temp_path();
    let out = append_rate_in(&path, threads, d);
    let _ = std::fs::remove_file(&path);
    out
}

fn append_rate_in(path: &Path, threads: usize, d: Duration) -> Result<AppendRate, String> {
    let a = GroupAppender::create(path).map_err(|e| e.to_string())?;
    let start = Instant::now();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let a = &a;
                s.spawn(move || -> Result<(), String> {
                    let mut record = [0u8; RECORD];
                    record[0] = t as u8;
                    let mut i = 0u64;
                    while start.elapsed() < d {
                        record[8..16].copy_from_slice(&i.to_le_bytes());
                        a.append(&record)?;
                        i += 1;
                    }
                    Ok(())
                })
            })
            .collect();
        handles
            .into_iter()
            .try_for_each(|h| h.join().expect("append thread"))
    })?;
    let secs = start.elapsed().as_secs_f64();
    let st = a.stats();
    Ok(AppendRate {
        per_sec: st.appends as f64 / secs,
        per_sync: st.appends as f64 / st.syncs.max(1) as f64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_append_is_counted_and_written() {
        let path = temp_path();
        let a = GroupAppender::create(&path).unwrap();
        let (threads, each) = (8u64, 50u64);
        std::thread::scope(|s| {
            for t in 0..threads {
                let a = &a;
                s.spawn(move || {
                    for i in 0..each {
                        a.append(&[t as u8, i as u8, 0, 0]).unwrap();
                    }
                });
            }
        });
        let st = a.stats();
        let len = std::fs::metadata(&path).unwrap().len();
        let _ = std::fs::remove_file(&path);
        assert_eq!(st.appends, threads * each);
        assert_eq!(st.bytes, threads * each * 4);
        assert_eq!(len, st.bytes);
        assert!(st.syncs >= 1 && st.syncs <= st.appends);
    }

    #[test]
    fn a_short_run_gives_a_rate() {
        let r = append_rate(2, Duration::from_millis(50)).unwrap();
        assert!(r.per_sec > 0.0 && r.per_sync >= 1.0);
    }
}
