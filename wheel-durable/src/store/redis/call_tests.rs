//! Tests of how the store calls its operations (`call.rs`): the library
//! loaded once per server and shared, loaded again when the server lost
//! it, and the scripts where the server has no functions.
//!
//! Node state: none.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{Mode, Options, Part, RedisStore, Servers};
use crate::AddMode;
use crate::store::{Due, NewTimer, Store, StoreClock};
use wheel_testkit::{RedisServer, ServerOptions};

fn options(url: String) -> Options {
    Options {
        servers: Servers::One(url),
        part: Part::WHOLE,
        namespace: "calls".into(),
        clock: StoreClock::Real,
        window: 10,
        unavailable_after: Duration::from_secs(2),
        replicas: None,
    }
}

/// A store calling as `mode` says, in a namespace of its own.
fn open_in(server: &RedisServer, mode: Mode) -> RedisStore {
    let mut o = options(server.url());
    o.namespace = format!("{mode:?}");
    match mode {
        Mode::Functions => RedisStore::open(o),
        Mode::Scripts => RedisStore::open_scripts(o),
    }
    .unwrap()
}

fn conn(url: &str) -> redis::Connection {
    redis::Client::open(url).unwrap().get_connection().unwrap()
}

fn add(store: &RedisStore, key: &str) {
    let t = NewTimer {
        key,
        due: Due::After(60_000),
        payload: b"p",
    };
    assert_eq!(store.add(&[t], AddMode::Replace).unwrap(), [true]);
}

/// The names of the libraries on the server and of their functions.
fn libraries(c: &mut redis::Connection) -> Vec<(String, Vec<String>)> {
    let list: Vec<redis::Value> = redis::cmd("FUNCTION").arg("LIST").query(c).unwrap();
    let text = |v: &redis::Value| match v {
        redis::Value::BulkString(b) => String::from_utf8(b.clone()).unwrap(),
        redis::Value::SimpleString(s) => s.clone(),
        v => panic!("{v:?}"),
    };
    let field = |lib: &[redis::Value], name: &str| {
        let i = lib.iter().position(|v| text(v) == name).unwrap();
        lib[i + 1].clone()
    };
    list.iter()
        .map(|lib| {
            let redis::Value::Array(lib) = lib else {
                panic!("{lib:?}")
            };
            let redis::Value::Array(functions) = field(lib, "functions") else {
                panic!("{lib:?}")
            };
            let names = functions
                .iter()
                .map(|f| match f {
                    redis::Value::Array(f) => text(&field(f, "name")),
                    f => panic!("{f:?}"),
                })
                .collect();
            (text(&field(lib, "library_name")), names)
        })
        .collect()
}

#[test]
fn stores_on_one_server_load_one_library_and_name_its_functions_by_its_hash() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let a = RedisStore::open(options(server.url())).unwrap();
    // The second finds the library loaded: same name, same code.
    let b = RedisStore::open(options(server.url())).unwrap();
    assert_eq!((a.mode(), b.mode()), (Mode::Functions, Mode::Functions));
    let libs = libraries(&mut conn(&server.url()));
    let [(name, functions)] = libs.as_slice() else {
        panic!("{libs:?}")
    };
    let hash = name.strip_prefix("wheel_").unwrap();
    assert!(
        hash.len() == 8 && hash.bytes().all(|c| c.is_ascii_hexdigit()),
        "{name}"
    );
    assert_eq!(functions.len(), 19, "{functions:?}");
    assert!(
        functions.contains(&format!("{name}_claim")),
        "{functions:?}"
    );
    assert!(
        functions.contains(&format!("{name}_dead_letters")),
        "{functions:?}"
    );
    add(&a, "k");
    assert!(b.cancel("k").unwrap());
}

/// A server that lost the code (`FUNCTION FLUSH` or `SCRIPT FLUSH`, as
/// after a restart without persistence) gets it again on the next call,
/// which answers as if nothing had happened.
#[test]
fn a_flushed_library_or_script_is_loaded_again_by_the_next_call() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let mut c = conn(&server.url());
    for mode in [Mode::Functions, Mode::Scripts] {
        let store = open_in(&server, mode);
        add(&store, "a");
        let what = if mode == Mode::Functions {
            "FUNCTION"
        } else {
            "SCRIPT"
        };
        redis::cmd(what).arg("FLUSH").exec(&mut c).unwrap();
        add(&store, "b");
        assert_eq!(store.get("a").unwrap().unwrap().payload, b"p");
        assert!(store.cancel("b").unwrap());
        // Loaded again: the library, or the scripts the calls ran.
        if mode == Mode::Functions {
            assert_eq!(libraries(&mut c).len(), 1);
        } else {
            let sha = [&store.scripts.add, &store.scripts.cancel].map(|op| op.script.get_hash());
            let exists: Vec<i64> = redis::cmd("SCRIPT")
                .arg("EXISTS")
                .arg(&sha)
                .query(&mut c)
                .unwrap();
            assert_eq!(exists, [1, 1]);
        }
    }
}

/// A `redis-server` whose `FUNCTION` and `FCALL` are renamed away: to a
/// client, a server without functions (as before Redis 7).
struct NoFunctions {
    child: Child,
    url: String,
}

impl NoFunctions {
    fn start() -> NoFunctions {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .args(["--rename-command", "FUNCTION", "wheel-test-no-function"])
            .args(["--rename-command", "FCALL", "wheel-test-no-fcall"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let server = NoFunctions {
            child,
            url: format!("redis://127.0.0.1:{port}/0"),
        };
        let until = Instant::now() + Duration::from_secs(10);
        let ping = || -> redis::RedisResult<String> {
            redis::cmd("PING")
                .query(&mut redis::Client::open(server.url.as_str())?.get_connection()?)
        };
        while ping().is_err() {
            assert!(Instant::now() < until, "redis-server did not answer");
            std::thread::sleep(Duration::from_millis(20));
        }
        server
    }
}

impl Drop for NoFunctions {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_server_without_functions_gets_the_scripts() {
    if !RedisServer::available() {
        return;
    }
    let server = NoFunctions::start();
    let store = RedisStore::open(options(server.url.clone())).unwrap();
    assert_eq!(store.mode(), Mode::Scripts);
    add(&store, "k");
    assert_eq!(store.get("k").unwrap().unwrap().payload, b"p");
    assert!(store.cancel("k").unwrap());
    assert_eq!(store.counts().unwrap().pending, 0);
}

/// A server over `maxmemory` refuses writes; the reads still answer, in
/// both forms, and a write is an error, not a lost timer.
#[test]
fn a_server_refusing_writes_still_answers_the_reads() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let mut c = conn(&server.url());
    for mode in [Mode::Functions, Mode::Scripts] {
        let store = open_in(&server, mode);
        add(&store, "k");
        redis::cmd("CONFIG")
            .arg("SET")
            .arg("maxmemory")
            .arg(1)
            .exec(&mut c)
            .unwrap();
        assert_eq!(store.counts().unwrap().pending, 1, "{mode:?}");
        assert_eq!(store.get("k").unwrap().unwrap().payload, b"p");
        assert_eq!(store.ended("k").unwrap(), None);
        assert_eq!(store.dead_letters(10).unwrap().len(), 0);
        assert_eq!(
            store.list(crate::Listing::Pending, None, 10).unwrap().len(),
            1
        );
        assert_eq!(store.list_schedules(None, 10).unwrap().len(), 0);
        let t = NewTimer {
            key: "refused",
            due: Due::After(60_000),
            payload: b"",
        };
        let e = store.add(&[t], AddMode::Replace).unwrap_err();
        assert!(matches!(e, crate::DurableError::Store(_)), "{e:?}");
        redis::cmd("CONFIG")
            .arg("SET")
            .arg("maxmemory")
            .arg(0)
            .exec(&mut c)
            .unwrap();
        assert_eq!(store.get("refused").unwrap(), None);
    }
}
