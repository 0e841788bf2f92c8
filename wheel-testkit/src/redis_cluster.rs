//! A private Redis Cluster on loopback: `masters` masters with `replicas`
//! replicas each, every node a `redis-server --cluster-enabled yes` on a
//! free port in a directory of its own, joined by `redis-cli --cluster
//! create`, all killed (SIGKILL) and their directories removed when
//! dropped.
//!
//! A test may move one slot to another master while clients run (the
//! steps `redis-cli --cluster reshard` takes, for one slot: `IMPORTING`,
//! `MIGRATING`, `MIGRATE` of its keys in batches, then `SETSLOT NODE`),
//! and kill a master and promote its replica (`CLUSTER FAILOVER FORCE`).
//! Nodes notice a peer down after the node timeout, 1 s here.

use std::io;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::redis_server::{free_port, fresh_dir, on_path};

/// One node of a [`RedisCluster`].
#[derive(Debug)]
struct Node {
    port: u16,
    /// The cluster bus's port.
    bus: u16,
    dir: PathBuf,
    child: Option<Child>,
}

/// One line of `CLUSTER NODES`.
#[derive(Debug, Clone)]
struct Seen {
    id: String,
    port: u16,
    master: bool,
    failed: bool,
    /// Ranges of slots it serves, inclusive.
    slots: Vec<(u16, u16)>,
}

/// A running Redis Cluster owned by this process.
///
/// # Examples
///
/// ```
/// use wheel_testkit::RedisCluster;
///
/// // `None` (with the reason printed) without redis-server and redis-cli.
/// if let Some(cluster) = RedisCluster::for_test(3, 0) {
///     assert_eq!(cluster.urls().len(), 3);
///     let port = cluster.master_of(0)?;
///     assert!(cluster.urls().iter().any(|u| u.ends_with(&format!(":{port}"))));
/// }
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct RedisCluster {
    nodes: Vec<Node>,
}

/// Runs `redis-cli -p port args…` and returns what it printed.
fn cli(port: u16, args: &[&str]) -> io::Result<String> {
    let out = Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .args(args)
        .stdin(Stdio::null())
        .output()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() || text.starts_with("ERR") || text.starts_with("(error)") {
        return Err(io::Error::other(format!("redis-cli {args:?}: {text}")));
    }
    Ok(text)
}

/// `cli`, which must answer OK.
fn ok(port: u16, args: &[&str]) -> io::Result<()> {
    let reply = cli(port, args)?;
    if reply.trim() == "OK" {
        Ok(())
    } else {
        Err(io::Error::other(format!("{args:?} answered {reply}")))
    }
}

/// Parses `CLUSTER NODES`.
fn parse_nodes(text: &str) -> Vec<Seen> {
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let addr = f.get(1)?.split('@').next()?;
            let port = addr.rsplit(':').next()?.parse().ok()?;
            let flags = f.get(2)?;
            let slots = f
                .iter()
                .skip(8)
                .filter(|s| !s.starts_with('['))
                .filter_map(|s| match s.split_once('-') {
                    Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
                    None => s.parse().ok().map(|n| (n, n)),
                })
                .collect();
            Some(Seen {
                id: (*f.first()?).to_owned(),
                port,
                master: flags.contains("master"),
                failed: flags.contains("fail"),
                slots,
            })
        })
        .collect()
}

/// Polls `ready` every 50 ms for up to `limit`.
fn wait(what: &str, limit: Duration, mut ready: impl FnMut() -> bool) -> io::Result<()> {
    let until = Instant::now() + limit;
    while !ready() {
        if Instant::now() > until {
            return Err(io::Error::other(format!("{what} within {limit:?}")));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

impl RedisCluster {
    /// Whether `redis-server` and `redis-cli` are on the PATH.
    ///
    /// # Examples
    ///
    /// ```
    /// if !wheel_testkit::RedisCluster::available() {
    ///     eprintln!("the cluster part is skipped");
    /// }
    /// ```
    pub fn available() -> bool {
        on_path("redis-server") && on_path("redis-cli")
    }

    /// A cluster for a test, or `None` (with the reason printed) when the
    /// programs are missing and `WHEEL_REQUIRE_REDIS` is not `1`.
    ///
    /// # Panics
    ///
    /// When the cluster is required but cannot be made.
    ///
    /// # Examples
    ///
    /// ```
    /// if let Some(cluster) = wheel_testkit::RedisCluster::for_test(3, 0) {
    ///     assert!(cluster.urls()[0].starts_with("redis://127.0.0.1:"));
    /// }
    /// ```
    pub fn for_test(masters: usize, replicas: usize) -> Option<RedisCluster> {
        if !Self::available() {
            if std::env::var("WHEEL_REQUIRE_REDIS").as_deref() == Ok("1") {
                panic!("WHEEL_REQUIRE_REDIS=1 but redis-server or redis-cli is not on the PATH");
            }
            eprintln!("skipped: redis-server or redis-cli is not on the PATH");
            return None;
        }
        Some(Self::start(masters, replicas).expect("start a Redis Cluster"))
    }

    /// Starts `masters` masters (at least 3, as Redis requires) with
    /// `replicas` replicas each and waits until every node reports the
    /// cluster ok.
    ///
    /// # Errors
    ///
    /// When a server does not start, or the cluster is not ok within 20 s.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_testkit::RedisCluster;
    ///
    /// if RedisCluster::available() {
    ///     let cluster = RedisCluster::start(3, 1)?;
    ///     assert_eq!(cluster.urls().len(), 6);
    /// }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn start(masters: usize, replicas: usize) -> io::Result<RedisCluster> {
        let mut cluster = RedisCluster { nodes: Vec::new() };
        for _ in 0..masters * (1 + replicas) {
            let mut node = Node {
                port: free_port()?,
                bus: free_port()?,
                dir: fresh_dir()?,
                child: None,
            };
            launch(&mut node)?;
            cluster.nodes.push(node);
        }
        let addrs: Vec<String> = cluster
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let out = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addrs)
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .stdin(Stdio::null())
            .output()?;
        if !out.status.success() {
            let text = String::from_utf8_lossy(&out.stdout);
            return Err(io::Error::other(format!("cluster create: {text}")));
        }
        cluster.wait_ok()?;
        cluster.wait_links()?;
        Ok(cluster)
    }

    /// Waits until every live node reports `cluster_state:ok` and sees
    /// every slot served by a master it does not think failed.
    fn wait_ok(&self) -> io::Result<()> {
        wait("the cluster ok", Duration::from_secs(20), || {
            self.live().all(|p| {
                let state = cli(p, &["CLUSTER", "INFO"]).unwrap_or_default();
                let seen = cli(p, &["CLUSTER", "NODES"]).map(|t| parse_nodes(&t));
                let covered: u32 = seen
                    .unwrap_or_default()
                    .iter()
                    .filter(|s| s.master && !s.failed)
                    .flat_map(|s| &s.slots)
                    .map(|(a, b)| u32::from(b - a) + 1)
                    .sum();
                state.contains("cluster_state:ok") && covered == 16_384
            })
        })
    }

    fn live(&self) -> impl Iterator<Item = u16> + '_ {
        self.nodes
            .iter()
            .filter(|n| n.child.is_some())
            .map(|n| n.port)
    }

    fn seen(&self) -> io::Result<Vec<Seen>> {
        let port = self
            .live()
            .next()
            .ok_or_else(|| io::Error::other("no node alive"))?;
        Ok(parse_nodes(&cli(port, &["CLUSTER", "NODES"])?))
    }

    /// The URL of every node alive, masters and replicas.
    ///
    /// # Examples
    ///
    /// ```
    /// if let Some(c) = wheel_testkit::RedisCluster::for_test(3, 0) {
    ///     assert!(c.urls().iter().all(|u| u.starts_with("redis://127.0.0.1:")));
    /// }
    /// ```
    pub fn urls(&self) -> Vec<String> {
        self.live()
            .map(|p| format!("redis://127.0.0.1:{p}"))
            .collect()
    }

    /// The port of the master that serves `slot`, as a live node sees it.
    ///
    /// # Errors
    ///
    /// When no live node answers, or none serves the slot.
    ///
    /// # Examples
    ///
    /// ```
    /// if let Some(c) = wheel_testkit::RedisCluster::for_test(3, 0) {
    ///     assert_ne!(c.master_of(0)?, c.master_of(16_383)?);
    /// }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn master_of(&self, slot: u16) -> io::Result<u16> {
        self.seen()?
            .into_iter()
            .find(|s| {
                s.master && !s.failed && s.slots.iter().any(|(a, b)| (*a..=*b).contains(&slot))
            })
            .map(|s| s.port)
            .ok_or_else(|| io::Error::other(format!("no master serves slot {slot}")))
    }

    /// The ports of the masters alive.
    ///
    /// # Errors
    ///
    /// When no live node answers.
    ///
    /// # Examples
    ///
    /// ```
    /// if let Some(c) = wheel_testkit::RedisCluster::for_test(3, 1) {
    ///     assert_eq!(c.masters()?.len(), 3);
    /// }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn masters(&self) -> io::Result<Vec<u16>> {
        let live: Vec<u16> = self.live().collect();
        Ok(self
            .seen()?
            .into_iter()
            .filter(|s| s.master && !s.failed && live.contains(&s.port))
            .map(|s| s.port)
            .collect())
    }

    /// Moves `slot` to the master at port `to`, its keys `batch` at a time
    /// with `pause` between batches, while clients go on: they meet
    /// `ASK`/`TRYAGAIN` while it migrates and `MOVED` after.
    ///
    /// # Errors
    ///
    /// When a step is refused.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// if let Some(c) = wheel_testkit::RedisCluster::for_test(3, 0) {
    ///     let to = c.master_of(16_383)?;
    ///     c.move_slot(0, to, 10, Duration::ZERO)?;
    ///     assert_eq!(c.master_of(0)?, to);
    /// }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn move_slot(&self, slot: u16, to: u16, batch: usize, pause: Duration) -> io::Result<()> {
        let seen = self.seen()?;
        let from = self.master_of(slot)?;
        if from == to {
            return Ok(());
        }
        let id = |port: u16| {
            seen.iter()
                .find(|s| s.port == port)
                .map(|s| s.id.clone())
                .ok_or_else(|| io::Error::other(format!("no node at {port}")))
        };
        let (from_id, to_id, s) = (id(from)?, id(to)?, slot.to_string());
        ok(to, &["CLUSTER", "SETSLOT", &s, "IMPORTING", &from_id])?;
        ok(from, &["CLUSTER", "SETSLOT", &s, "MIGRATING", &to_id])?;
        loop {
            let n = batch.max(1).to_string();
            let keys = cli(from, &["CLUSTER", "GETKEYSINSLOT", &s, &n])?;
            let keys: Vec<&str> = keys.lines().filter(|k| !k.is_empty()).collect();
            if keys.is_empty() {
                break;
            }
            let port = to.to_string();
            let mut args = vec!["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS"];
            args.extend(&keys);
            let reply = cli(from, &args)?;
            if !matches!(reply.trim(), "OK" | "NOKEY") {
                return Err(io::Error::other(format!("MIGRATE answered {reply}")));
            }
            std::thread::sleep(pause);
        }
        // The new owner first, so that no node sends clients back to one
        // that no longer takes them.
        ok(to, &["CLUSTER", "SETSLOT", &s, "NODE", &to_id])?;
        ok(from, &["CLUSTER", "SETSLOT", &s, "NODE", &to_id])?;
        for m in self.masters()? {
            if m != to && m != from {
                let _ = cli(m, &["CLUSTER", "SETSLOT", &s, "NODE", &to_id]);
            }
        }
        wait(
            "every node to see the move",
            Duration::from_secs(10),
            || {
                self.live().all(|p| {
                    cli(p, &["CLUSTER", "NODES"]).is_ok_and(|t| {
                        parse_nodes(&t).iter().any(|n| {
                            n.port == to && n.slots.iter().any(|(a, b)| (*a..=*b).contains(&slot))
                        })
                    })
                })
            },
        )
    }

    /// Starts again every node killed by [`fail_over`](Self::fail_over),
    /// on its port and with its cluster state: a master that lost its
    /// slots rejoins as a replica of the node promoted in its place.
    /// Returns once every replica's link to its master is up.
    ///
    /// # Errors
    ///
    /// When a server does not start, or the cluster does not settle
    /// within 20 s.
    ///
    /// # Examples
    ///
    /// ```
    /// if let Some(mut c) = wheel_testkit::RedisCluster::for_test(3, 1) {
    ///     c.fail_over(0)?;
    ///     c.restart_killed()?;
    ///     assert_eq!(c.urls().len(), 6);
    ///     assert_eq!(c.masters()?.len(), 3);
    /// }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn restart_killed(&mut self) -> io::Result<()> {
        for n in self.nodes.iter_mut().filter(|n| n.child.is_none()) {
            launch(n)?;
        }
        self.wait_ok()?;
        self.wait_links()
    }

    /// Waits until every live replica's link to its master is up (a
    /// replica counts for `WAIT` only then).
    fn wait_links(&self) -> io::Result<()> {
        wait("every replica's link up", Duration::from_secs(20), || {
            self.live().all(|p| {
                let info = cli(p, &["INFO", "replication"]).unwrap_or_default();
                info.contains("role:master") || info.contains("master_link_status:up")
            })
        })
    }

    /// The slot of `key` (`CLUSTER KEYSLOT`).
    ///
    /// # Errors
    ///
    /// When no live node answers.
    ///
    /// # Examples
    ///
    /// ```
    /// if let Some(c) = wheel_testkit::RedisCluster::for_test(3, 0) {
    ///     assert_eq!(c.slot_of("{ns}:t")?, c.slot_of("{ns}:due")?);
    /// }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn slot_of(&self, key: &str) -> io::Result<u16> {
        let port = self
            .live()
            .next()
            .ok_or_else(|| io::Error::other("no node alive"))?;
        let reply = cli(port, &["CLUSTER", "KEYSLOT", key])?;
        reply
            .trim()
            .parse()
            .map_err(|_| io::Error::other(format!("CLUSTER KEYSLOT answered {reply}")))
    }

    /// The keys matching `pattern` on the node at `port` (`SCAN`).
    ///
    /// # Errors
    ///
    /// When the node does not answer.
    ///
    /// # Examples
    ///
    /// ```
    /// if let Some(c) = wheel_testkit::RedisCluster::for_test(3, 0) {
    ///     for m in c.masters()? {
    ///         assert!(c.keys_on(m, "*")?.is_empty(), "a new cluster is empty");
    ///     }
    /// }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn keys_on(&self, port: u16, pattern: &str) -> io::Result<Vec<String>> {
        let text = cli(port, &["--scan", "--pattern", pattern])?;
        Ok(text
            .lines()
            .filter(|k| !k.is_empty())
            .map(str::to_owned)
            .collect())
    }

    /// The replicas of the master at `port`.
    fn replicas_of(&self, master: u16) -> io::Result<Vec<u16>> {
        let seen = self.seen()?;
        let id = seen.iter().find(|s| s.port == master).map(|s| s.id.clone());
        let text = cli(master, &["CLUSTER", "REPLICAS", &id.unwrap_or_default()])?;
        Ok(parse_nodes(&text).iter().map(|s| s.port).collect())
    }

    fn child(&self, port: u16) -> Option<&Child> {
        self.nodes
            .iter()
            .find(|n| n.port == port)
            .and_then(|n| n.child.as_ref())
    }

    /// Cuts the replicas of the master serving `slot` off: each is frozen
    /// (SIGSTOP) and its link dropped (`CLIENT KILL TYPE replica`), so that
    /// none of the master's writes from now on reaches it, even from a
    /// socket buffer. [`fail_over`](Self::fail_over) thaws them.
    ///
    /// # Errors
    ///
    /// When a signal or the command fails.
    ///
    /// # Examples
    ///
    /// ```
    /// if let Some(mut c) = wheel_testkit::RedisCluster::for_test(3, 1) {
    ///     c.cut_replica(0)?;
    ///     c.fail_over(0)?; // the replica is promoted without what followed
    /// }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn cut_replica(&self, slot: u16) -> io::Result<()> {
        let master = self.master_of(slot)?;
        for r in self.replicas_of(master)? {
            if let Some(c) = self.child(r) {
                signal(c, "STOP")?;
            }
        }
        cli(master, &["CLIENT", "KILL", "TYPE", "replica"]).map(|_| ())
    }

    /// Kills the master that serves `slot` (SIGKILL) and promotes one of
    /// its replicas (`CLUSTER FAILOVER FORCE`, after thawing it if
    /// [`cut_replica`](Self::cut_replica) froze it); returns the new
    /// master's port once every live node reports the cluster ok.
    ///
    /// # Errors
    ///
    /// When the master has no replica, or no replica takes over within
    /// 20 s.
    ///
    /// # Examples
    ///
    /// ```
    /// if let Some(mut c) = wheel_testkit::RedisCluster::for_test(3, 1) {
    ///     let old = c.master_of(0)?;
    ///     let new = c.fail_over(0)?;
    ///     assert_ne!(old, new);
    ///     assert_eq!(c.master_of(0)?, new);
    /// }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn fail_over(&mut self, slot: u16) -> io::Result<u16> {
        let master = self.master_of(slot)?;
        let replicas = self.replicas_of(master)?;
        let Some(&replica) = replicas.first() else {
            return Err(io::Error::other("the master has no replica"));
        };
        if let Some(n) = self.nodes.iter_mut().find(|n| n.port == master) {
            if let Some(mut c) = n.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
        if let Some(c) = self.child(replica) {
            signal(c, "CONT")?;
        }
        // A replica the others marked failed while frozen must be seen
        // alive again before it may be elected.
        wait(
            "the replica to be seen alive",
            Duration::from_secs(20),
            || {
                self.seen()
                    .is_ok_and(|s| s.iter().any(|n| n.port == replica && !n.failed))
            },
        )?;
        ok(replica, &["CLUSTER", "FAILOVER", "FORCE"])?;
        wait("the replica to take over", Duration::from_secs(20), || {
            self.master_of(slot).is_ok_and(|p| p == replica)
        })?;
        self.wait_ok()?;
        Ok(replica)
    }
}

/// Sends `SIG<name>` to a node's process.
fn signal(child: &Child, name: &str) -> io::Result<()> {
    let status = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(child.id().to_string())
        .status()?;
    if status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!("kill -{name} failed")))
    }
}

fn launch(node: &mut Node) -> io::Result<()> {
    let child = Command::new("redis-server")
        .args(["--port", &node.port.to_string(), "--bind", "127.0.0.1"])
        // The bus's own free port: the default, port + 10 000, may be
        // taken or past 65 535.
        .args(["--cluster-port", &node.bus.to_string()])
        .args([
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
        ])
        .args(["--cluster-node-timeout", "1000"])
        .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
        .arg("--dir")
        .arg(&node.dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    node.child = Some(child);
    let port = node.port;
    let mut exited = None;
    wait("redis-server to answer", Duration::from_secs(20), || {
        let child = node
            .child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten());
        if let Some(status) = child {
            exited = Some(status);
            return true;
        }
        cli(port, &["PING"]).is_ok_and(|r| r.trim() == "PONG")
    })?;
    match exited {
        Some(status) => Err(io::Error::other(format!("redis-server exited: {status}"))),
        None => Ok(()),
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for n in &mut self.nodes {
            if let Some(mut c) = n.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
            let _ = std::fs::remove_dir_all(&n.dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_nodes;

    #[test]
    fn cluster_nodes_lines_parse() {
        let text = "\
a1 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460 [5461->-b2]
b2 127.0.0.1:7001@17001 master - 0 0 2 connected 5461-10922 12000
c3 127.0.0.1:7003@17003 slave a1 0 0 1 connected
d4 127.0.0.1:7002@17002 master,fail - 0 0 3 disconnected
";
        let s = parse_nodes(text);
        assert_eq!(s.len(), 4);
        assert_eq!(
            (s[0].port, s[0].master, s[0].slots.clone()),
            (7000, true, vec![(0, 5460)])
        );
        assert_eq!(s[1].slots, vec![(5461, 10922), (12000, 12000)]);
        assert!(!s[2].master && s[2].slots.is_empty());
        assert!(s[3].failed);
    }
}
