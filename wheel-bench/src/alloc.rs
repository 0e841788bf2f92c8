//! A counting global allocator for the memory figures.
//!
//! Counting is switched on only while a memory measurement runs
//! ([`Counting::start`]); otherwise every call costs one relaxed load of a flag
//! that nobody writes, so the timed runs are not slowed by a shared counter that
//! every thread would otherwise fight over. Crates such as `stats_alloc` and `cap`
//! count on every call, always: that contended `fetch_add` would tax exactly the
//! threaded peers that allocate per timer, so this crate keeps its own small
//! wrapper instead of adding a dependency.
//!
//! Invariant: the counter is the bytes allocated minus the bytes freed (or
//! shrunk) *while counting was on*; a block allocated before `start` and freed
//! during the window makes it go down, which is why it is signed.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// The system allocator plus a switchable live-bytes counter.
pub struct CountingAlloc;

static COUNTING: AtomicBool = AtomicBool::new(false);
static LIVE_BYTES: AtomicI64 = AtomicI64::new(0);

#[inline]
fn count(delta: i64) {
    if COUNTING.load(Ordering::Relaxed) {
        LIVE_BYTES.fetch_add(delta, Ordering::Relaxed);
    }
}

// SAFETY: every method forwards to `System` with the caller's own arguments, so
// `System`'s guarantees are passed through unchanged; the only addition is an
// atomic counter update, which neither allocates nor touches the memory.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        unsafe {
            let p = System.alloc(layout);
            if !p.is_null() {
                count(layout.size() as i64);
            }
            p
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        unsafe {
            let p = System.alloc_zeroed(layout);
            if !p.is_null() {
                count(layout.size() as i64);
            }
            p
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe {
            System.dealloc(ptr, layout);
            count(-(layout.size() as i64));
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        unsafe {
            let p = System.realloc(ptr, layout, new_size);
            if !p.is_null() {
                count(new_size as i64 - layout.size() as i64);
            }
            p
        }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// Serialises measurement windows (the counter is process-wide).
static WINDOW: Mutex<()> = Mutex::new(());

/// A live-bytes measurement window. Windows are serialised: `start` waits until
/// any other window is closed.
#[derive(Debug)]
pub struct Counting(#[allow(dead_code)] MutexGuard<'static, ()>);

impl Counting {
    /// Zero the counter and start counting, in every thread.
    pub fn start() -> Counting {
        let guard = WINDOW
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        LIVE_BYTES.store(0, Ordering::SeqCst);
        COUNTING.store(true, Ordering::SeqCst);
        Counting(guard)
    }

    /// Bytes allocated minus bytes freed since [`Counting::start`].
    pub fn live_bytes(&self) -> i64 {
        LIVE_BYTES.load(Ordering::SeqCst)
    }
}

impl Drop for Counting {
    fn drop(&mut self) {
        COUNTING.store(false, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_a_vec_and_its_release() {
        const BYTES: i64 = 1 << 20;
        const NOISE: i64 = 64 << 10; // other test threads allocate too
        let c = Counting::start();
        let v: Vec<u8> = std::hint::black_box(Vec::with_capacity(BYTES as usize));
        let with = c.live_bytes();
        assert!((BYTES - NOISE..BYTES + NOISE).contains(&with), "{with}");
        drop(v);
        assert!(c.live_bytes() < with - BYTES + NOISE);
    }
}
