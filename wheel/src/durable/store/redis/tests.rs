//! Redis-specific tests; the differential tests in `store/tests.rs` also
//! run every sequence on this store when `redis-server` is available.

use std::time::Duration;

use super::{Options, RedisStore};
use crate::durable::redis_server::{RedisServer, ServerOptions};
use crate::durable::store::{Due, NewTimer, Store, StoreClock};
use crate::durable::{AddMode, DurableError};

fn options(url: String, clock: StoreClock) -> Options {
    Options {
        url,
        namespace: "diff".into(),
        clock,
        window: 10,
        unavailable_after: Duration::from_secs(2),
    }
}

/// A fresh server and a store on it, for one differential sequence.
pub(crate) fn store_for_differential(clock: StoreClock) -> Option<(RedisServer, Box<dyn Store>)> {
    let server = RedisServer::for_test(ServerOptions::default())?;
    let store = RedisStore::open(options(server.url(), clock)).expect("open the Redis store");
    Some((server, Box::new(store)))
}

#[test]
fn an_unreachable_server_is_unavailable_within_the_bound() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut o = options(format!("redis://127.0.0.1:{port}/0"), StoreClock::Real);
    o.unavailable_after = Duration::from_millis(300);
    let started = std::time::Instant::now();
    let e = RedisStore::open(o).err().expect("nothing listens there");
    assert!(matches!(e, DurableError::Unavailable(_)), "{e:?}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_restarted_server_is_reached_again_and_scripts_reload() {
    let Some(mut server) = RedisServer::for_test(ServerOptions { aof: true }) else {
        return;
    };
    let store = RedisStore::open(options(server.url(), StoreClock::Real)).unwrap();
    let t = NewTimer {
        key: "k",
        due: Due::After(60_000),
        payload: b"p",
    };
    store.add(&[t], AddMode::Replace).unwrap();
    // AOF fsyncs every second: wait for the write to reach the file.
    std::thread::sleep(Duration::from_millis(1_200));
    server.restart().unwrap();
    // The pooled connection is broken and the scripts are gone (NOSCRIPT).
    let info = store
        .get("k")
        .unwrap()
        .expect("kept by the append-only file");
    assert_eq!(info.payload, b"p");
    assert!(store.cancel("k").unwrap());
}

/// A timer record whose state byte says a first due time follows, without
/// its eight bytes: the scripts refuse it, nothing is claimed from it.
#[test]
fn a_flagged_record_missing_its_first_due_time_is_an_error_not_a_timer() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let store = RedisStore::open(options(
        server.url(),
        StoreClock::Manual(Default::default()),
    ))
    .unwrap();
    let mut record = vec![0u8; 29];
    record[28] = 0x80; // pending, flagged
    let mut conn = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    redis::cmd("HSET")
        .arg("{diff}:t")
        .arg("k")
        .arg(record)
        .exec(&mut conn)
        .unwrap();
    redis::cmd("ZADD")
        .arg("{diff}:due")
        .arg(0)
        .arg("k")
        .exec(&mut conn)
        .unwrap();
    let e = store.get("k").unwrap_err();
    assert!(matches!(e, DurableError::Store(_)), "{e:?}");
    let req = crate::durable::store::ClaimRequest {
        window: 0,
        lease: 1_000,
        max: 10,
        max_attempts: 3,
    };
    let e = store.claim(&req).unwrap_err();
    assert!(matches!(e, DurableError::Store(_)), "{e:?}");
    let source = std::error::Error::source(&e).expect("the script's error");
    assert!(source.is::<redis::RedisError>(), "{source:?}");
}
