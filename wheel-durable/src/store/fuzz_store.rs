//! The embedded store the differential harness ([`super::fuzz`]) runs
//! beside the model: a pool of open stores, each with the manual clock it
//! reads, taken by a bench and handed back wiped when the bench is done.
//!
//! Opening a store (fjall recovering thirteen keyspaces from their files)
//! costs several times what a whole input's operations do, and a fuzz
//! run executes thousands of inputs a second, so a store is opened once
//! and wiped between benches ([`Embedded::wipe`]).
//!
//! For the same reason the store runs its writer on the bench's thread
//! (`Embedded::run_inline`): the bench calls one step at a time, each a
//! group of its own either way, and handing each to the writer thread
//! and back cost more than the step.
//!
//! Invariants:
//! - A bench gets a store exclusively (taken out of the pool), holding
//!   nothing, with its writer's state that of a store just opened and its
//!   clock reading [`START`]: an input's answers depend on the input
//!   alone, never on the inputs run before it.
//! - A store goes back to the pool only after a wipe that succeeded and
//!   only from a bench that did not panic (a failed step may leave the
//!   store half-way through a change); otherwise it is closed and its
//!   directory removed.
//! - A store is closed and replaced after [`REOPEN_AFTER`] benches, so
//!   that fjall's history of deletes (tombstones, journal files, memtable
//!   versions) and the memory it holds stay bounded however long a fuzz
//!   run lasts.
//!
//! Node state: none (a test harness over stores, without a node).

use std::cell::RefCell;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use super::embedded::Embedded;
use super::fuzz::START;
use super::{Store, StoreClock, StoreResult};

/// Benches a store serves before it is closed and a fresh copy opened.
const REOPEN_AFTER: u32 = 1_000;

/// An open embedded store, the manual clock it reads, and its directory.
pub(crate) struct Pooled {
    /// The clock the store reads (and the bench's model with it).
    pub(crate) clock: Arc<AtomicU64>,
    pub(crate) store: Embedded,
    /// Benches served so far.
    uses: u32,
    /// Declared after the store, so dropped after it is closed.
    _dir: tempfile::TempDir,
}

thread_local! {
    /// The stores no bench of this thread holds, each holding nothing;
    /// per thread, so that they are closed and their directories removed
    /// when the thread ends (a test's) or the process exits (the fuzz
    /// target's), which a static's are not.
    static POOL: RefCell<Vec<Pooled>> = const { RefCell::new(Vec::new()) };
}

impl Pooled {
    /// A store from the pool, or a fresh one when the pool is empty, with
    /// its clock at [`START`].
    ///
    /// # Panics
    ///
    /// If a fresh store cannot be opened.
    pub(crate) fn take() -> Pooled {
        let pooled = POOL.with_borrow_mut(Vec::pop).unwrap_or_else(Pooled::open);
        pooled.clock.store(START, Ordering::SeqCst);
        pooled
    }

    /// An empty store in a fresh directory.
    fn open() -> Pooled {
        let clock = Arc::new(AtomicU64::new(START));
        let dir = scratch_dir();
        let path = dir.path().join("store");
        write_empty_store(&path);
        let store = Embedded::open(&path, StoreClock::Manual(clock.clone()), 10)
            .and_then(|s| s.run_inline().map(|()| s))
            .expect("open the embedded store");
        Pooled {
            clock,
            store,
            uses: 0,
            _dir: dir,
        }
    }

    /// Wipes the store and puts it back in the pool, or closes it once it
    /// served [`REOPEN_AFTER`] benches.
    ///
    /// # Panics
    ///
    /// If the wipe fails: the store failed on the operations of the bench
    /// that used it.
    pub(crate) fn give_back(mut self) {
        self.uses += 1;
        if self.uses >= REOPEN_AFTER {
            return;
        }
        self.wipe().expect("wipe the embedded store");
        POOL.with_borrow_mut(|pool| pool.push(self));
    }

    /// Wipes the store ([`Embedded::wipe`]) at [`START`].
    fn wipe(&self) -> StoreResult<()> {
        // The wipe's own steps run at the time a fresh store opens at.
        self.clock.store(START, Ordering::SeqCst);
        self.store.wipe()
    }
}

/// A fresh directory for the embedded store, in memory (`/dev/shm`) where
/// there is one: every durable step fsyncs, which on a disk costs more
/// than everything else a run does.
fn scratch_dir() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(dir) = tempfile::Builder::new()
            .prefix("wheel-durable")
            .tempdir_in(shm)
    {
        return dir;
    }
    tempfile::tempdir().expect("a temporary directory")
}

/// A file of a store: its bytes up to the last non-zero one, and its
/// length (fjall preallocates its journal, zeros that a copy need not
/// write: setting the length gives them back).
struct StoreFile {
    bytes: Vec<u8>,
    len: u64,
}

/// A file or (`None`) a directory of a store, by its path inside the
/// store's directory, parents before their children.
type StoreFiles = Vec<(PathBuf, Option<StoreFile>)>;

/// Writes an empty, closed embedded store into `path`, a fresh copy of
/// one created once per process and kept in memory. Creating a store
/// (eight keyspaces, each a version file and a compaction of fjall's own
/// keyspace) costs more than opening one, so each store the pool opens
/// starts from a byte-for-byte copy instead: a store as empty as a new
/// one, which it opens the way a restarted node opens its store.
///
/// # Panics
///
/// If the empty store cannot be created or copied.
fn write_empty_store(path: &Path) {
    static EMPTY: OnceLock<StoreFiles> = OnceLock::new();
    let files = EMPTY.get_or_init(|| {
        let dir = scratch_dir();
        let store = dir.path().join("store");
        let clock = StoreClock::Manual(Arc::new(AtomicU64::new(START)));
        Embedded::open(&store, clock, 10)
            .and_then(|s| s.close())
            .expect("create an empty embedded store");
        let mut files = Vec::new();
        read_tree(&store, Path::new(""), &mut files).expect("read the empty store");
        files
    });
    std::fs::create_dir(path).expect("create the store's directory");
    for (rel, contents) in files {
        let to = path.join(rel);
        match contents {
            None => std::fs::create_dir(&to),
            Some(file) => std::fs::File::create(&to).and_then(|mut f| {
                f.write_all(&file.bytes)?;
                f.set_len(file.len)
            }),
        }
        .unwrap_or_else(|e| panic!("copy the empty store to {}: {e}", to.display()));
    }
}

/// Appends what lies under `root.join(rel)` to `out`, parents first.
fn read_tree(root: &Path, rel: &Path, out: &mut StoreFiles) -> std::io::Result<()> {
    for entry in std::fs::read_dir(root.join(rel))? {
        let entry = entry?;
        let rel = rel.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            out.push((rel.clone(), None));
            read_tree(root, &rel, out)?;
        } else {
            let mut bytes = std::fs::read(root.join(&rel))?;
            let len = bytes.len() as u64;
            bytes.truncate(bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1));
            out.push((rel, Some(StoreFile { bytes, len })));
        }
    }
    Ok(())
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::store::fuzz::{DurableBench, DurableOp as Op};
    use crate::store::fuzz_schedules::ScheduleOp;

    /// Operations that leave something in every part of the store: timers
    /// pending, claimed, running, parked and dead, fences handed out, a
    /// rate slot taken, a paused flow key and limits, a dedup memory and a
    /// schedule, with the dedup window on.
    fn fill() -> Vec<Op> {
        let add = |key| Op::Add {
            key,
            at: 5,
            after: false,
            payload: 3,
            if_absent: false,
        };
        vec![
            Op::DedupWindow(1_000),
            Op::SetLimits { flow: 1, limits: 1 },
            Op::Pause {
                flow: 2,
                paused: true,
            },
            add(0),
            add(1),
            add(2),
            add(3),
            add(4),
            Op::Advance(10),
            Op::Claim {
                window: 0,
                lease: 200,
                max: 7,
                max_attempts: 3,
            },
            Op::Start {
                keys: vec![(0, false), (1, false), (4, false)],
                flows: vec![1, 0, 0],
                lease: 200,
            },
            Op::Finish(vec![(1, false, 2, 7), (4, false, 0, 0)]),
            Op::Defer {
                keys: vec![(2, false)],
                flows: vec![2],
            },
            add(5),
            Op::Schedule(ScheduleOp::Upsert {
                id: 0,
                def: 0,
                payload: 1,
            }),
        ]
    }

    /// A store used by one bench and wiped answers every operation of
    /// the next bench as a fresh store does, from its first one on: the
    /// whole store compared (counts, listings, dead letters, flows,
    /// schedules, memories), then the same operations again, each answer
    /// compared (fences, rate slots and the dedup window start over).
    #[test]
    fn a_wiped_store_answers_as_a_fresh_one() {
        let ops = fill();
        let mut bench = DurableBench::new();
        ops.iter().for_each(|op| bench.step(op));
        bench.check_all();
        let counts = bench.model().counts().unwrap();
        assert!(counts.pending > 0 && counts.claimed > 0 && counts.dead > 0 && counts.parked > 0);
        assert!(
            bench
                .model()
                .ended(crate::store::fuzz::KEYS[4])
                .unwrap()
                .is_some()
        );
        let pooled = bench.into_store();
        pooled.clock.store(START + 12_345, Ordering::SeqCst);
        pooled.wipe().unwrap();
        let mut bench = DurableBench::on(pooled);
        bench.check_all();
        ops.iter().for_each(|op| bench.step(op));
        bench.check_all();
    }
}
