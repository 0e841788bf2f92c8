//! Test and benchmark support: a private `redis-server` on a free loopback
//! port, in a directory of its own, stopped when dropped. Not part of the
//! stable API.
//!
//! Tests call [`RedisServer::for_test`]: without `redis-server` on the
//! PATH it says why the test is skipped and returns `None`, unless
//! `WHEEL_REQUIRE_REDIS=1` is set (as CI does), in which case it fails the
//! test.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// How a server is started.
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    /// Append-only file on, fsynced before each write is acknowledged
    /// (`appendfsync always`, so a killed server loses nothing acked); off
    /// means nothing survives a restart.
    pub aof: bool,
}

/// A running `redis-server` owned by this process.
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
    pub fn available() -> bool {
        on_path("redis-server")
    }

    /// A server for a test, or `None` (with the reason printed) when there
    /// is no `redis-server` and `WHEEL_REQUIRE_REDIS` is not `1`.
    ///
    /// # Panics
    ///
    /// When the server is required but missing, or fails to start.
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
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// The server's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's directory (its append-only file lives there).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Kills the server at once (SIGKILL): nothing is flushed.
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
    pub fn restart(&mut self) -> io::Result<()> {
        self.kill();
        self.launch()
    }

    /// The server's `used_memory` in bytes.
    ///
    /// # Errors
    ///
    /// When the server does not answer.
    pub fn used_memory(&self) -> io::Result<u64> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port))?;
        s.set_read_timeout(Some(Duration::from_secs(2)))?;
        s.write_all(b"INFO memory\r\n")?;
        let reader = BufReader::new(s);
        for line in reader.lines() {
            let line = line?;
            if let Some(v) = line.strip_prefix("used_memory:") {
                return v
                    .trim()
                    .parse()
                    .map_err(|_| io::Error::other("bad used_memory"));
            }
        }
        Err(io::Error::other("no used_memory in INFO"))
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
