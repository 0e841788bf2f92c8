//! A private `redis-server` on a free loopback port, in a directory of its
//! own, stopped (SIGKILL) and its directory removed when dropped.
//!
//! Tests call [`RedisServer::for_test`]: without `redis-server` on the
//! PATH it says why the test is skipped and returns `None`, unless
//! `WHEEL_REQUIRE_REDIS=1` is set (as CI does), in which case it fails the
//! test. The server saves no snapshots and binds to 127.0.0.1 only, so a
//! test never touches a Redis it did not start.
//!
//! A server may be a replica of another ([`RedisServer::replica_of`]), and
//! a test may freeze it (SIGSTOP), thaw it and promote it, to stage a
//! failover whose loss is known in advance.

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
    /// The port of the master this server replicates, if it is a replica.
    master: Option<u16>,
}

pub(crate) fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

pub(crate) fn free_port() -> io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

pub(crate) fn fresh_dir() -> io::Result<PathBuf> {
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

/// The text of `INFO section` (a bulk reply), one `name:value` per line.
fn info(port: u16, section: &str) -> io::Result<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(2)))?;
    s.write_all(format!("INFO {section}\r\n").as_bytes())?;
    let mut r = BufReader::new(s);
    let mut head = String::new();
    r.read_line(&mut head)?;
    let len: usize = head
        .trim_end()
        .strip_prefix('$')
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| io::Error::other(format!("INFO answered {head:?}")))?;
    let mut body = vec![0; len];
    io::Read::read_exact(&mut r, &mut body)?;
    Ok(String::from_utf8_lossy(&body).into_owned())
}

/// The value of `name` in an `INFO` text.
fn field<'a>(info: &'a str, name: &str) -> Option<&'a str> {
    info.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(str::trim)
}

/// Polls `ready` every 20 ms for up to 10 s.
fn wait_for(what: &str, mut ready: impl FnMut() -> io::Result<bool>) -> io::Result<()> {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        if ready()? {
            return Ok(());
        }
        if Instant::now() > until {
            return Err(io::Error::other(format!("{what} within 10 s")));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
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
            master: None,
        };
        server.launch()?;
        Ok(server)
    }

    /// Starts a replica of `master` (`--replicaof`), with `master`'s
    /// options, and waits until its link to the master is up and it holds
    /// everything the master had written.
    ///
    /// # Errors
    ///
    /// As for [`start`](Self::start), or when the link is not up within
    /// 10 s.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_testkit::{RedisServer, ServerOptions};
    ///
    /// if let Some(master) = RedisServer::for_test(ServerOptions::default()) {
    ///     let replica = RedisServer::replica_of(&master)?;
    ///     assert_ne!(replica.url(), master.url());
    /// }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn replica_of(master: &RedisServer) -> io::Result<RedisServer> {
        let mut server = RedisServer {
            child: None,
            port: free_port()?,
            dir: fresh_dir()?,
            options: master.options.clone(),
            master: Some(master.port),
        };
        server.launch()?;
        wait_for("the replica's link did not come up", || {
            let i = info(server.port, "replication")?;
            Ok(field(&i, "master_link_status") == Some("up"))
        })?;
        server.wait_caught_up(master)?;
        Ok(server)
    }

    /// Waits until this replica has processed every write `master` had
    /// made when called (its replication offset has reached the master's).
    ///
    /// # Errors
    ///
    /// When it has not within 10 s, or either server does not answer.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_testkit::{RedisServer, ServerOptions};
    ///
    /// if let Some(master) = RedisServer::for_test(ServerOptions::default()) {
    ///     let replica = RedisServer::replica_of(&master)?;
    ///     replica.wait_caught_up(&master)?;
    /// }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn wait_caught_up(&self, master: &RedisServer) -> io::Result<()> {
        let offset = |port, name: &str| -> io::Result<u64> {
            let i = info(port, "replication")?;
            field(&i, name)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| io::Error::other(format!("no {name} in INFO")))
        };
        let target = offset(master.port, "master_repl_offset")?;
        wait_for("the replica did not catch up", || {
            Ok(offset(self.port, "slave_repl_offset")? >= target)
        })
    }

    /// Freezes the server (SIGSTOP): it keeps its connections but answers
    /// nothing, as a replica that has fallen behind, until
    /// [`resume`](Self::resume).
    ///
    /// # Errors
    ///
    /// When the signal cannot be sent.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_testkit::{RedisServer, ServerOptions};
    ///
    /// if let Some(server) = RedisServer::for_test(ServerOptions::default()) {
    ///     server.pause()?;
    ///     server.resume()?;
    /// }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn pause(&self) -> io::Result<()> {
        self.signal("-STOP")
    }

    /// Thaws a server frozen by [`pause`](Self::pause) (SIGCONT).
    ///
    /// # Errors
    ///
    /// When the signal cannot be sent.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_testkit::{RedisServer, ServerOptions};
    ///
    /// if let Some(server) = RedisServer::for_test(ServerOptions::default()) {
    ///     server.resume()?; // a running server is unaffected
    /// }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn resume(&self) -> io::Result<()> {
        self.signal("-CONT")
    }

    fn signal(&self, which: &str) -> io::Result<()> {
        let pid = self
            .child
            .as_ref()
            .ok_or_else(|| io::Error::other("the server is not running"))?
            .id();
        let status = Command::new("kill")
            .args([which, &pid.to_string()])
            .status()?;
        if !status.success() {
            return Err(io::Error::other(format!("kill {which} {pid}: {status}")));
        }
        Ok(())
    }

    /// Closes this master's links to its replicas (`CLIENT KILL TYPE
    /// replica`), as a network partition would. A replica frozen by
    /// [`pause`](Self::pause) first cannot link again, so it receives
    /// nothing the master writes from then on; a frozen replica still
    /// linked would, on thawing, apply what its socket buffer holds.
    ///
    /// # Errors
    ///
    /// When the server does not answer with a count.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_testkit::{RedisServer, ServerOptions};
    ///
    /// if let Some(master) = RedisServer::for_test(ServerOptions::default()) {
    ///     let replica = RedisServer::replica_of(&master)?;
    ///     replica.pause()?;
    ///     master.disconnect_replicas()?;
    /// }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn disconnect_replicas(&self) -> io::Result<()> {
        let reply = command(self.port, "CLIENT KILL TYPE replica")?;
        if !reply.starts_with(':') {
            return Err(io::Error::other(format!("CLIENT KILL: {reply}")));
        }
        Ok(())
    }

    /// Makes a replica a master (`REPLICAOF NO ONE`), as a failover does:
    /// it keeps what it had and takes writes from now on.
    ///
    /// # Errors
    ///
    /// When the server does not answer `+OK`.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_testkit::{RedisServer, ServerOptions};
    ///
    /// if let Some(mut master) = RedisServer::for_test(ServerOptions::default()) {
    ///     let mut replica = RedisServer::replica_of(&master)?;
    ///     master.kill();
    ///     replica.promote()?;
    /// }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn promote(&mut self) -> io::Result<()> {
        let reply = command(self.port, "REPLICAOF NO ONE")?;
        if reply != "+OK" {
            return Err(io::Error::other(format!("REPLICAOF NO ONE: {reply}")));
        }
        self.master = None;
        Ok(())
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
        if let Some(port) = self.master {
            cmd.args(["--replicaof", "127.0.0.1", &port.to_string()]);
        }
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
