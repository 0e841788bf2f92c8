//! Products are published at a chosen time through a `DelayQueue`; some are
//! withdrawn before their time and must never appear.
//!
//! A publisher thread blocks on `take()`; the simulated day is driven by a
//! `ManualClock`, so the whole day runs in milliseconds.
//!
//! Run: `cargo run --release -p wheel --example delayed_publish`

use std::collections::HashMap;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use wheel::{DelayKey, DelayQueue, ManualClock};

const HOUR: Duration = Duration::from_secs(3600);
const MINUTE: Duration = Duration::from_secs(60);
const PRODUCTS: u64 = 2_000;

#[derive(Debug)]
struct Product {
    id: u64,
    /// When the merchant wants it live (offset from the start of the day).
    publish_at: Duration,
}

fn main() {
    let clock = ManualClock::new();
    let day_start = clock.now();
    let queue: DelayQueue<Product> = DelayQueue::builder()
        .clock(clock.clone())
        .tick(Duration::from_secs(1))
        .build()
        .expect("valid settings");

    let (published_tx, published_rx) = mpsc::channel::<(u64, Duration, Duration)>();
    let mut keys: HashMap<u64, (DelayKey, Duration)> = HashMap::new();

    thread::scope(|s| {
        // The publisher: takes products as they come due until closed.
        let (queue, clock) = (&queue, &clock);
        let publisher = s.spawn(move || {
            let mut count = 0u64;
            for product in queue.iter() {
                let now = clock.now() - day_start;
                published_tx
                    .send((product.id, product.publish_at, now))
                    .unwrap();
                count += 1;
            }
            count
        });

        // Merchants schedule products over the day at minute resolution.
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        for id in 0..PRODUCTS {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let publish_at = MINUTE * (x % (24 * 60)) as u32;
            let key = queue
                .insert_at(Product { id, publish_at }, day_start + publish_at)
                .expect("queue open");
            keys.insert(id, (key, publish_at));
        }

        // Run the day in 10-minute steps; every 7th product is withdrawn
        // one step before it would go live (if it has not gone live yet).
        let mut withdrawn = Vec::new();
        let step = 10 * MINUTE;
        let mut t = Duration::ZERO;
        while t < 24 * HOUR {
            for (&id, &(key, at)) in &keys {
                if id % 7 == 0 && at >= t + step && at < t + 2 * step {
                    let product = queue.remove(key).expect("not yet published");
                    assert_eq!(product.id, id);
                    withdrawn.push(id);
                }
            }
            clock.advance(step);
            t += step;
            // Let the publisher catch up: wait (real time, generously) until
            // only the products due after `t` are left.
            let not_due = keys
                .iter()
                .filter(|(id, (_, at))| *at > t && !withdrawn.contains(*id))
                .count();
            let give_up = Instant::now() + Duration::from_secs(20);
            while queue.len() != not_due {
                assert!(Instant::now() < give_up, "publisher stalled");
                thread::sleep(Duration::from_micros(200));
            }
        }
        assert!(queue.is_empty());
        queue.close();
        let published_count = publisher.join().unwrap();

        // Check: everything not withdrawn went live exactly once, never
        // early, in time order; nothing withdrawn went live.
        let published: Vec<(u64, Duration, Duration)> = published_rx.iter().collect();
        assert_eq!(published.len() as u64, published_count);
        let mut seen = vec![false; PRODUCTS as usize];
        let mut last = Duration::ZERO;
        let mut max_delay = Duration::ZERO;
        for &(id, at, live) in &published {
            assert!(!seen[id as usize], "product {id} published twice");
            seen[id as usize] = true;
            assert!(live >= at, "product {id} published early");
            assert!(at >= last, "out of order");
            last = at;
            max_delay = max_delay.max(live - at);
        }
        for &id in &withdrawn {
            assert!(!seen[id as usize], "withdrawn product {id} was published");
        }
        assert_eq!(
            published.len() + withdrawn.len(),
            PRODUCTS as usize,
            "a product was lost"
        );
        assert!(queue.drain().is_empty());
        assert!(max_delay < step, "published later than one clock step");

        println!("delayed_publish: one simulated day in 10-minute steps");
        println!("  scheduled  {PRODUCTS} products at minute resolution");
        println!("  withdrawn  {} before going live", withdrawn.len());
        println!(
            "  published  {} (each once, in time order)",
            published.len()
        );
        println!(
            "  latest publication after its time: {} min (the clock moves in {} min steps)",
            max_delay.as_secs() / 60,
            step.as_secs() / 60
        );
        for &(id, at, live) in published.iter().take(3) {
            println!(
                "  e.g. product {id:>4}: due {:02}:{:02}, live at {:02}:{:02}",
                at.as_secs() / 3600,
                at.as_secs() / 60 % 60,
                live.as_secs() / 3600,
                live.as_secs() / 60 % 60
            );
        }
    });
}
