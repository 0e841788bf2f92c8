//! Orders finished now get an automatic 5-star rating 48 hours later,
//! unless the customer rated them first; refunded orders are never rated.
//!
//! Two simulated days run on a `ManualClock` in well under a second. Every
//! order ends with exactly one outcome, and no automatic rating happens
//! before the 48 hours are up.
//!
//! Run: `cargo run --release -p wheel --example order_autorate`

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use wheel::{ManualClock, Scheduler, TimerHandle};

const ORDERS: usize = 10_000;
const HOUR: Duration = Duration::from_secs(3600);
const AUTO_RATE_AFTER: Duration = Duration::from_secs(48 * 3600);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Open,
    RatedByCustomer(u8),
    AutoRated,
    Refunded,
}

fn main() {
    let clock = ManualClock::new();
    let start = clock.now();
    let scheduler = Scheduler::builder()
        .clock(clock.clone())
        .tick(Duration::from_secs(1))
        .build()
        .expect("valid settings");

    let outcomes = Arc::new(Mutex::new(vec![Outcome::Open; ORDERS]));
    let auto_at = Arc::new(Mutex::new(Vec::new())); // when each auto-rating ran
    let callbacks_done = Arc::new(AtomicU64::new(0));

    // Every order finished "now": rate it automatically in 48 hours.
    let handles: Vec<TimerHandle> = (0..ORDERS)
        .map(|id| {
            let (outcomes, auto_at, done, clock) = (
                Arc::clone(&outcomes),
                Arc::clone(&auto_at),
                Arc::clone(&callbacks_done),
                clock.clone(),
            );
            scheduler
                .schedule(AUTO_RATE_AFTER, move || {
                    let mut o = outcomes.lock().unwrap();
                    assert_eq!(o[id], Outcome::Open, "order {id} rated twice");
                    o[id] = Outcome::AutoRated;
                    auto_at.lock().unwrap().push(clock.now() - start);
                    done.fetch_add(1, Ordering::SeqCst);
                })
                .expect("scheduler running")
        })
        .collect();

    // Simulate 48 hours, one hour at a time. Each hour some customers rate
    // (which cancels the automatic rating) and some orders are refunded.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut rand = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let (mut rated, mut refunded) = (0, 0);
    for hour in 0..48 {
        for _ in 0..80 {
            let id = (rand() % ORDERS as u64) as usize;
            let stars = (rand() % 5 + 1) as u8;
            let refund = rand() % 4 == 0;
            // `cancel` is true iff the automatic rating will never run.
            if handles[id].cancel() {
                let mut o = outcomes.lock().unwrap();
                if refund {
                    o[id] = Outcome::Refunded;
                    refunded += 1;
                } else {
                    o[id] = Outcome::RatedByCustomer(stars);
                    rated += 1;
                }
            }
        }
        clock.advance(HOUR);
        if hour < 47 {
            assert_eq!(callbacks_done.load(Ordering::SeqCst), 0, "rated early");
        }
    }

    // At hour 48 every remaining order is rated by the scheduler's workers;
    // wait (real time, generously) for them.
    let expected = (ORDERS - rated - refunded) as u64;
    let give_up = Instant::now() + Duration::from_secs(20);
    while callbacks_done.load(Ordering::SeqCst) < expected {
        assert!(Instant::now() < give_up, "automatic ratings missing");
        thread::sleep(Duration::from_millis(1));
    }

    // A customer who comes back after 48 hours is too late: the order was
    // rated automatically, and `cancel` says so.
    let late = handles
        .iter()
        .enumerate()
        .find(|(id, _)| outcomes.lock().unwrap()[*id] == Outcome::AutoRated)
        .map(|(id, h)| (id, h.cancel()));
    assert_eq!(late.map(|l| l.1), Some(false));

    let outcomes = outcomes.lock().unwrap();
    let count = |f: fn(&Outcome) -> bool| outcomes.iter().filter(|o| f(o)).count();
    let auto = count(|o| *o == Outcome::AutoRated);
    let by_customer = count(|o| matches!(o, Outcome::RatedByCustomer(_)));
    let refunds = count(|o| *o == Outcome::Refunded);
    assert_eq!(count(|o| *o == Outcome::Open), 0, "an order has no outcome");
    assert_eq!((by_customer, refunds), (rated, refunded));
    assert_eq!(auto + by_customer + refunds, ORDERS);
    let auto_at = auto_at.lock().unwrap();
    assert_eq!(auto_at.len(), auto);
    assert!(auto_at.iter().all(|&t| t == AUTO_RATE_AFTER));
    let stats = scheduler.stats();
    assert_eq!(stats.fired, auto as u64);
    assert_eq!(stats.pending, 0);

    println!("order_autorate: {ORDERS} orders finished at t = 0 h; two simulated days");
    println!("  rated by the customer within 48 h : {by_customer}");
    println!("  refunded (rating cancelled)       : {refunds}");
    println!("  rated 5 stars automatically       : {auto}, all at exactly t = 48 h");
    println!(
        "  a customer rating order {} at t = 48 h is too late: cancel() = false",
        late.map_or(0, |l| l.0)
    );
    println!(
        "  scheduler: {} scheduled, {} cancelled, {} fired",
        stats.scheduled, stats.cancelled, stats.fired
    );
}
