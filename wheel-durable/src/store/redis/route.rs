//! Where a store's keys live: one server, or the master that holds their
//! hash slot in a Redis Cluster.
//!
//! Every key of a store carries one hash tag (`mod.rs`), so they all hash
//! to one slot and every call goes to one node. On one server that node
//! never changes. In a cluster the route keeps the master it believes
//! holds the slot, read from `CLUSTER SLOTS` of any node it can reach
//! (the seeds, then every node the last map named). A call that meets a
//! change of the cluster — `MOVED` after a reshard, `ASK` or `TRYAGAIN`
//! while the slot migrates, `CLUSTERDOWN` or a refused connection while a
//! failover elects a new master, `READONLY` from a demoted master — marks
//! the route stale; the next call reads the map again and connects to
//! the master it names. The store's `with_conn` retries such calls with
//! back-off, within `unavailable_after`, as it retries a lost connection.
//!
//! `ASK` is waited out rather than followed: our calls name a score of
//! keys, and a node importing a slot refuses a multi-key call unless it
//! holds every key already (`TRYAGAIN`), so following it would only
//! trade one refusal for another until the migration ends with `MOVED`.
//!
//! Invariants: `epoch` grows each time the believed master changes or is
//! forgotten; a pooled connection made at an older epoch is dropped, not
//! reused, so no call goes to a node the route has moved away from.
//!
//! Node state: none (below the store).

use std::sync::Mutex;
use std::time::Duration;

use redis::{ConnectionAddr, ConnectionInfo, ErrorKind, IntoConnectionInfo, RedisError};
use redis::{RedisResult, ServerErrorKind, Value};

use crate::DurableError;
use crate::store::StoreResult;
use crate::sync::lock;

/// The hash slots of a Redis Cluster.
pub(crate) const SLOTS: u16 = 16_384;

/// A node's address: host and port.
pub(super) type Addr = (String, u16);

/// How long asking one node for the map may take.
const MAP_TIMEOUT: Duration = Duration::from_millis(500);

/// The servers a store names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Servers {
    /// One server (or a replica set behind one address), by URL.
    One(String),
    /// A Redis Cluster, by the URLs of some of its nodes.
    Cluster(Vec<String>),
}

/// Which of a namespace's partitions a store holds (`store/partitioned.rs`
/// places timers; this says where each part's keys live).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Part {
    /// From 0 to `count - 1`.
    pub(crate) index: u32,
    /// At least 1; 1 is the whole namespace.
    pub(crate) count: u32,
}

impl Part {
    /// The namespace undivided.
    pub(crate) const WHOLE: Part = Part { index: 0, count: 1 };

    /// The hash tag of this part's keys: the namespace itself when whole,
    /// else the first `ns/index/i` (i = 0, 1, …) whose slot lies in the
    /// `index`-th of `count` equal slot ranges, so that the parts spread
    /// over masters that split the slots evenly (as `redis-cli --cluster
    /// create` does) and every node computes the same tags.
    pub(crate) fn tag(self, ns: &str) -> String {
        if self.count <= 1 {
            return ns.to_owned();
        }
        let wanted = u64::from(self.index);
        (0..100_000u32)
            .map(|i| format!("{ns}/{}/{i}", self.index))
            .find(|t| u64::from(slot_of(t)) * u64::from(self.count) / u64::from(SLOTS) == wanted)
            .unwrap_or_else(|| format!("{ns}/{}", self.index))
    }
}

/// The slot of a hash tag (the text between the braces): CRC16/XMODEM
/// modulo [`SLOTS`], as every cluster node computes it.
pub(crate) fn slot_of(tag: &str) -> u16 {
    crc16::State::<crc16::XMODEM>::calculate(tag.as_bytes()) % SLOTS
}

/// How a store reaches the node holding its keys.
pub(crate) struct Route {
    kind: Kind,
}

enum Kind {
    One(redis::Client),
    Cluster(Cluster),
}

struct Cluster {
    /// The nodes given; their settings (password, TLS) serve every node.
    seeds: Vec<ConnectionInfo>,
    slot: u16,
    state: Mutex<Map>,
}

/// What the route believes about the cluster.
#[derive(Default)]
struct Map {
    /// The master holding the slot and a client for it; `None` when stale.
    master: Option<(Addr, redis::Client)>,
    /// Bumped whenever `master` changes or is forgotten.
    epoch: u64,
    /// Every node the last map named, asked before the seeds.
    known: Vec<Addr>,
}

fn config(what: String) -> DurableError {
    DurableError::Config(what)
}

impl Route {
    /// The route to the node holding the keys tagged `tag`. Checks the
    /// URLs only; nothing is connected yet.
    pub(crate) fn new(servers: &Servers, tag: &str) -> StoreResult<Route> {
        let kind = match servers {
            Servers::One(url) => Kind::One(
                redis::Client::open(url.as_str()).map_err(|e| config(format!("redis url: {e}")))?,
            ),
            Servers::Cluster(urls) if urls.is_empty() => {
                return Err(config(
                    "a Redis Cluster needs at least one node's URL".into(),
                ));
            }
            Servers::Cluster(urls) => {
                let seeds = urls
                    .iter()
                    .map(|u| {
                        u.as_str()
                            .into_connection_info()
                            .map_err(|e| config(format!("redis cluster url {u:?}: {e}")))
                    })
                    .collect::<StoreResult<Vec<_>>>()?;
                if let Some(s) = seeds.iter().find(|s| s.redis_settings().db() != 0) {
                    let db = s.redis_settings().db();
                    return Err(config(format!(
                        "a Redis Cluster has only database 0, the URL names {db}"
                    )));
                }
                Kind::Cluster(Cluster {
                    seeds,
                    slot: slot_of(tag),
                    state: Mutex::new(Map::default()),
                })
            }
        };
        Ok(Route { kind })
    }

    /// Whether the keys live in a cluster.
    pub(crate) fn is_cluster(&self) -> bool {
        matches!(self.kind, Kind::Cluster(_))
    }

    /// The current epoch (see the module docs).
    pub(crate) fn epoch(&self) -> u64 {
        match &self.kind {
            Kind::One(_) => 0,
            Kind::Cluster(c) => lock(&c.state).epoch,
        }
    }

    /// A client for the node holding the keys, with the epoch it belongs
    /// to; in a cluster whose map is stale, reads the map first.
    pub(crate) fn client(&self) -> RedisResult<(u64, redis::Client)> {
        match &self.kind {
            Kind::One(c) => Ok((0, c.clone())),
            Kind::Cluster(c) => {
                {
                    let map = lock(&c.state);
                    if let Some((_, client)) = &map.master {
                        return Ok((map.epoch, client.clone()));
                    }
                }
                c.refresh()
            }
        }
    }

    /// Forgets the master of `epoch` after a call there met a change of
    /// the cluster (or a broken connection): the next call reads the map.
    pub(crate) fn stale(&self, epoch: u64) {
        if let Kind::Cluster(c) = &self.kind {
            let mut map = lock(&c.state);
            if map.epoch == epoch && map.master.is_some() {
                map.master = None;
                map.epoch += 1;
            }
        }
    }
}

impl Cluster {
    /// Asks the known nodes, then the seeds, for the map, until one
    /// answers; takes the master it names for the slot.
    fn refresh(&self) -> RedisResult<(u64, redis::Client)> {
        let known = lock(&self.state).known.clone();
        let mut last = None;
        let candidates = known
            .iter()
            .map(|(h, p)| self.info_for(h, *p))
            .chain(self.seeds.iter().cloned());
        for info in candidates {
            match ask_map(&info, self.slot) {
                Ok((master, nodes)) => {
                    let client = redis::Client::open(self.info_for(&master.0, master.1))?;
                    let mut map = lock(&self.state);
                    map.epoch += 1;
                    map.master = Some((master, client.clone()));
                    map.known = nodes;
                    return Ok((map.epoch, client));
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| RedisError::from((ErrorKind::Io, "no cluster node to ask"))))
    }

    /// The first seed's settings at another node's address.
    fn info_for(&self, host: &str, port: u16) -> ConnectionInfo {
        let seed = &self.seeds[0];
        let addr = match seed.addr() {
            ConnectionAddr::TcpTls {
                insecure,
                tls_params,
                ..
            } => ConnectionAddr::TcpTls {
                host: host.to_owned(),
                port,
                insecure: *insecure,
                tls_params: tls_params.clone(),
            },
            _ => ConnectionAddr::Tcp(host.to_owned(), port),
        };
        seed.clone().set_addr(addr)
    }
}

/// `CLUSTER SLOTS` of one node: the master of `slot` and every node named.
fn ask_map(info: &ConnectionInfo, slot: u16) -> RedisResult<(Addr, Vec<Addr>)> {
    let asked = match info.addr() {
        ConnectionAddr::Tcp(h, _) | ConnectionAddr::TcpTls { host: h, .. } => h.clone(),
        _ => String::new(),
    };
    let mut c = redis::Client::open(info.clone())?.get_connection_with_timeout(MAP_TIMEOUT)?;
    c.set_read_timeout(Some(MAP_TIMEOUT))?;
    let reply: Value = redis::cmd("CLUSTER").arg("SLOTS").query(&mut c)?;
    let nodes = nodes_of(&reply, &asked);
    match master_of(&reply, slot, &asked) {
        Some(m) => Ok((m, nodes)),
        // A node that does not serve the slot yet (a cluster still being
        // made, or every master of the slot down): the call waits.
        None => Err(RedisError::from((
            ErrorKind::Server(ServerErrorKind::ClusterDown),
            "no master serves the slot",
        ))),
    }
}

/// A node of a `CLUSTER SLOTS` entry: `[host, port, id, …]`; an empty host
/// means the node answering.
fn node_of(v: &Value, asked: &str) -> Option<Addr> {
    let Value::Array(f) = v else { return None };
    let host = match f.first()? {
        Value::BulkString(b) => String::from_utf8(b.clone()).ok()?,
        Value::SimpleString(s) => s.clone(),
        _ => return None,
    };
    let port = match f.get(1)? {
        Value::Int(p) => u16::try_from(*p).ok()?,
        _ => return None,
    };
    let host = if host.is_empty() || host == "?" {
        asked.to_owned()
    } else {
        host
    };
    Some((host, port))
}

/// The slot range `[start, end]` of a `CLUSTER SLOTS` entry.
fn range_of(entry: &[Value]) -> Option<(i64, i64)> {
    match (entry.first()?, entry.get(1)?) {
        (Value::Int(a), Value::Int(b)) => Some((*a, *b)),
        _ => None,
    }
}

/// The master of `slot` in a `CLUSTER SLOTS` reply.
pub(super) fn master_of(reply: &Value, slot: u16, asked: &str) -> Option<Addr> {
    let Value::Array(entries) = reply else {
        return None;
    };
    entries.iter().find_map(|e| {
        let Value::Array(e) = e else { return None };
        let (a, b) = range_of(e)?;
        (a..=b)
            .contains(&i64::from(slot))
            .then(|| node_of(e.get(2)?, asked))?
    })
}

/// Every node, master or replica, a `CLUSTER SLOTS` reply names.
pub(super) fn nodes_of(reply: &Value, asked: &str) -> Vec<Addr> {
    let Value::Array(entries) = reply else {
        return Vec::new();
    };
    let mut nodes: Vec<Addr> = entries
        .iter()
        .filter_map(|e| match e {
            Value::Array(e) => Some(e.iter().skip(2).filter_map(|n| node_of(n, asked))),
            _ => None,
        })
        .flatten()
        .collect();
    nodes.sort();
    nodes.dedup();
    nodes
}

/// Whether `e` says the cluster changed under the call (see the module
/// docs): worth a fresh map and another try.
pub(crate) fn moved(e: &RedisError) -> bool {
    matches!(
        e.kind(),
        ErrorKind::Server(
            ServerErrorKind::Moved
                | ServerErrorKind::Ask
                | ServerErrorKind::TryAgain
                | ServerErrorKind::ClusterDown
                | ServerErrorKind::MasterDown
                | ServerErrorKind::ReadOnly
        )
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(host: &str, port: i64) -> Value {
        Value::Array(vec![
            Value::BulkString(host.as_bytes().to_vec()),
            Value::Int(port),
            Value::BulkString(b"id".to_vec()),
        ])
    }

    fn entry(a: i64, b: i64, master: Value, replicas: Vec<Value>) -> Value {
        let mut e = vec![Value::Int(a), Value::Int(b), master];
        e.extend(replicas);
        Value::Array(e)
    }

    #[test]
    fn slots_are_the_clusters_crc16() {
        // The values `CLUSTER KEYSLOT` gives for these keys.
        assert_eq!(slot_of("123456789"), 0x31C3 % SLOTS);
        assert_eq!(slot_of("foo"), 12_182);
        assert_eq!(slot_of(""), 0);
        assert!(slot_of("any text at all") < SLOTS);
    }

    #[test]
    fn each_part_lands_in_its_own_slot_range() {
        assert_eq!(Part::WHOLE.tag("orders"), "orders");
        for count in [2u32, 3, 16, 256] {
            let mut seen = std::collections::HashSet::new();
            for index in 0..count {
                let tag = Part { index, count }.tag("orders");
                let slot = u32::from(slot_of(&tag));
                assert_eq!(slot * count / u32::from(SLOTS), index, "{tag}");
                assert!(tag.starts_with("orders/") && seen.insert(tag));
            }
        }
        // The same on every node: a pure function of the name and the part.
        let p = Part { index: 1, count: 3 };
        assert_eq!(p.tag("x"), p.tag("x"));
    }

    #[test]
    fn the_map_names_the_master_of_each_slot_and_every_node() {
        let reply = Value::Array(vec![
            entry(
                0,
                5460,
                node("10.0.0.1", 7000),
                vec![node("10.0.0.4", 7003)],
            ),
            entry(5461, 10922, node("", 7001), vec![]),
            entry(10923, 16383, node("10.0.0.3", 7002), vec![]),
        ]);
        assert_eq!(master_of(&reply, 0, "h"), Some(("10.0.0.1".into(), 7000)));
        assert_eq!(
            master_of(&reply, 5460, "h"),
            Some(("10.0.0.1".into(), 7000))
        );
        // An empty host is the node that answered.
        assert_eq!(master_of(&reply, 5461, "h"), Some(("h".into(), 7001)));
        assert_eq!(
            master_of(&reply, 16383, "h"),
            Some(("10.0.0.3".into(), 7002))
        );
        let nodes = nodes_of(&reply, "h");
        assert_eq!(nodes.len(), 4);
        assert!(nodes.contains(&("10.0.0.4".into(), 7003)));
    }

    #[test]
    fn a_slot_no_master_serves_has_none() {
        let reply = Value::Array(vec![entry(0, 99, node("a", 1), vec![])]);
        assert_eq!(master_of(&reply, 100, "h"), None);
        assert_eq!(master_of(&Value::Nil, 0, "h"), None);
        let odd = Value::Array(vec![Value::Array(vec![Value::Int(0)])]);
        assert_eq!(master_of(&odd, 0, "h"), None);
        assert!(nodes_of(&Value::Int(3), "h").is_empty());
    }

    #[test]
    fn a_cluster_needs_a_node_and_database_0() {
        let none = Route::new(&Servers::Cluster(vec![]), "t");
        assert!(matches!(none, Err(DurableError::Config(_))));
        let db = Route::new(
            &Servers::Cluster(vec!["redis://127.0.0.1:7000/3".into()]),
            "t",
        );
        assert!(matches!(db, Err(DurableError::Config(_))));
        let bad = Route::new(&Servers::Cluster(vec!["nonsense".into()]), "t");
        assert!(matches!(bad, Err(DurableError::Config(_))));
        let ok = Route::new(
            &Servers::Cluster(vec!["redis://127.0.0.1:7000".into()]),
            "t",
        );
        assert!(ok.is_ok_and(|r| r.is_cluster() && r.epoch() == 0));
    }
}
