//! A private `redis-server` on a free loopback port, in a directory of its
//! own, stopped (SIGKILL) and its directory removed when dropped.
//!
//! Tests call [`RedisServer::for_test`]: without `redis-server` on the
//! PATH it says why the test is skipped and returns `None`, unless
//! `WHEEL_REQUIRE_REDIS=1` is set (as CI does), in which case it fails the
//! test. The server saves no snapshots and binds to 127.0.0.1 only, so a
//! test never touches a Redis it did not start.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// How a server is started.
///
/// # Examples
///
/// ```
/// use wheel_testkit::ServerOptions;
///
/// // A server whose acknowledged writes survive a `restart`.
/// let durable = ServerOptions { aof: true };
/// assert!(!ServerOptions::default().aof);
/// # drop(durable);
/// ```
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    /// Append-only file on, fsynced before each write is acknowledged
    /// (`appendfsync always`, so a killed server loses nothing acked); off
    /// means nothing survives a restart.
    pub aof: bool,
}

/// A running `redis-server` owned by this process.
///
/// # Examples
///
/// ```
/// use wheel_testkit::{RedisServer, ServerOptions};
///
/// let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
///     return; // skipped: no redis-server
/// };
/// println!("a private server at {}", server.url());
/// ```
#[derive(Debug)]
pub struct RedisServer {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
    options: ServerOptions,
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

fn free_port() -> io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn fresh_dir() -> io::Result<PathBuf> {
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let dir = std::env::temp_dir().join(format!("wheel-redis-{}-{n}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// Sends one inline command and reads the first line of the reply.
fn command(port: u16, line: &str) -> io::Result<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(2)))?;
    s.write_all(format!("{line}\r\n").as_bytes())?;
    let mut reply = String::new();
    BufReader::new(s).read_line(&mut reply)?;
    Ok(reply.trim_end().to_owned())
}

impl RedisServer {
    /// Whether `redis-server` is on the PATH.
    ///
    /// # Examples
    ///
    /// ```
    /// if !wheel_testkit::RedisServer::available() {
    ///     eprintln!("the Redis part is skipped");
    /// }
    /// ```
    pub fn available() -> bool {
        on_path("redis-server")
    }

    /// A server for a test, or `None` (with the reason printed) when there
    /// is no `redis-server` and `WHEEL_REQUIRE_REDIS` is not `1`.
    ///
    /// # Panics
    ///
    /// When the server is required but missing, or fails to start.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_testkit::{RedisServer, ServerOptions};
    ///
    /// let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
    ///     return;
    /// };
    /// assert!(server.url().ends_with("/0"));
    /// ```
    pub fn for_test(options: ServerOptions) -> Option<RedisServer> {
        if !Self::available() {
            if std::env::var("WHEEL_REQUIRE_REDIS").as_deref() == Ok("1") {
                panic!("WHEEL_REQUIRE_REDIS=1 but redis-server is not on the PATH");
            }
            eprintln!(
                "skipped: redis-server is not on the PATH (apt-get install redis-server; \
                 set WHEEL_REQUIRE_REDIS=1 to make this a failure)"
            );
            return None;
        }
        Some(Self::start(options).expect("start redis-server"))
    }

    /// Starts a server on a free port.
    ///
    /// # Errors
    ///
    /// When `redis-server` cannot be started or does not answer within
    /// 10 s.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_testkit::{RedisServer, ServerOptions};
    ///
    /// if RedisServer::available() {
    ///     let server = RedisServer::start(ServerOptions::default())?;
    ///     println!("{}", server.url());
    /// }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn start(options: ServerOptions) -> io::Result<RedisServer> {
        let mut server = RedisServer {
            child: None,
            port: free_port()?,
            dir: fresh_dir()?,
            options,
        };
        server.launch()?;
        Ok(server)
    }

    fn launch(&mut self) -> io::Result<()> {
        let mut cmd = Command::new("redis-server");
        cmd.args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--daemonize", "no", "--protected-mode", "yes"])
            .args(["--appendonly", if self.options.aof { "yes" } else { "no" }])
            .args(["--appendfsync", "always"])
            .arg("--dir")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        self.child = Some(cmd.spawn()?);
        self.wait_ready()
    }

    fn wait_ready(&mut self) -> io::Result<()> {
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(reply) = command(self.port, "PING") {
                if reply == "+PONG" {
                    return Ok(());
                }
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                return Err(io::Error::other(format!("redis-server exited: {status}")));
            }
            if Instant::now() > until {
                return Err(io::Error::other("redis-server did not answer within 10 s"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The server's URL, database 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_testkit::{RedisServer, ServerOptions};
    ///
    /// if let Some(server) = RedisServer::for_test(ServerOptions::default()) {
    ///     assert!(server.url().starts_with("redis://127.0.0.1:"));
    /// }
    /// ```
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Kills the server at once (SIGKILL): nothing is flushed. It stays
    /// down until [`restart`](Self::restart).
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_testkit::{RedisServer, ServerOptions};
    ///
    /// if let Some(mut server) = RedisServer::for_test(ServerOptions::default()) {
    ///     server.kill();
    ///     let addr = server.url().trim_start_matches("redis://").trim_end_matches("/0").to_owned();
    ///     assert!(std::net::TcpStream::connect(addr).is_err(), "nothing listens");
    /// }
    /// ```
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Stops the server (SIGKILL, so only what the append-only file already
    /// holds survives) and starts it again on the same port and directory.
    ///
    /// # Errors
    ///
    /// As for [`start`](Self::start).
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_testkit::{RedisServer, ServerOptions};
    ///
    /// if let Some(mut server) = RedisServer::for_test(ServerOptions { aof: true }) {
    ///     let url = server.url();
    ///     server.restart()?;
    ///     assert_eq!(server.url(), url, "the same port");
    /// }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn restart(&mut self) -> io::Result<()> {
        self.kill();
        self.launch()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
