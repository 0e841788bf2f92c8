//! The core wheel allocates nothing per timer once it has room: inserts,
//! cancels, resets, cascades and polls run without touching the heap after
//! `with_capacity`, and a wheel that has been through a workload once runs
//! it again without allocating.
//!
//! A counting global allocator counts the allocations of the calling thread
//! only (other tests of this binary run on other threads).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use wheel::{TimerKey, Wheel};

struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.with(|c| c.set(c.get() + 1));
        // SAFETY: forwarded unchanged to the system allocator, whose contract
        // is the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.with(|c| c.set(c.get() + 1));
        // SAFETY: as for `alloc` and `dealloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCS.with(Cell::get)
}

/// A mixed workload over every level of the default layout: inserts spread
/// from 1 to 2^40 ticks ahead, a third cancelled, a third reset, then time
/// moved far enough to fire or cascade most of them. `keys` is scratch
/// space (kept by the caller so that its growth is not counted).
fn workload(wheel: &mut Wheel<u64>, keys: &mut Vec<(u64, TimerKey)>, n: u64, seed: u64) -> usize {
    let mut x = seed;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let now = wheel.now();
    keys.clear();
    for i in 0..n {
        let ahead = 1 + next() % (1u64 << (next() % 40));
        keys.push((i, wheel.insert(now + ahead, i)));
    }
    for &(i, key) in keys.iter() {
        match i % 3 {
            0 => {
                wheel.cancel(key);
            }
            1 => {
                wheel.reset(key, now + 1 + next() % 100_000);
            }
            _ => {}
        }
    }
    let mut fired = 0;
    for step in 1..=64 {
        while wheel.poll(now + step * 1_000_000).is_some() {
            fired += 1;
        }
    }
    fired
}

#[test]
fn no_allocation_per_timer_once_the_wheel_has_room() {
    const N: u64 = 20_000;
    let mut wheel = Wheel::with_capacity(N as usize);
    let mut keys = Vec::new();
    // Warm-up with twice as many timers: whatever the wheel allocates, it
    // allocates here.
    assert!(workload(&mut wheel, &mut keys, 2 * N, 1) > 0);
    let drained = wheel.drain().count();
    assert_eq!(wheel.len(), 0, "drained {drained}");

    let before = allocations();
    let fired = workload(&mut wheel, &mut keys, N, 2);
    let during = allocations() - before;
    assert!(fired > 0);
    assert_eq!(during, 0, "{during} allocations in a repeated workload");
}

#[test]
fn with_capacity_reserves_the_slot_cells_too() {
    const N: usize = 50_000;
    let before = allocations();
    let mut wheel = Wheel::with_capacity(N);
    let reserve = allocations() - before;
    // Deadlines spread over levels 0 to 2 (every slot gets cells).
    let before = allocations();
    for i in 0..N as u64 {
        wheel.insert(1 + (i * 7_919) % (1 << 24), i);
    }
    assert_eq!(allocations() - before, 0, "inserts allocated");
    // A few per level of the layout, whatever N is.
    assert!(reserve < 64, "{reserve} allocations to reserve");
    assert_eq!(wheel.len(), N);
}
