//! The builder's Redis settings: one server or a cluster, and a namespace
//! split in partitions (`store/partitioned.rs`, `store/redis/route.rs`).
//!
//! Node state: none (settings until `build`).

use std::sync::Arc;

use super::{Choice, DurableTimersBuilder};
use crate::DurableError;
use crate::store::Store;
use crate::store::partitioned::Partitioned;
use crate::store::redis::{Options, Part, RedisStore, Replicas, Servers};

impl DurableTimersBuilder {
    /// The Redis store at `url`, e.g. `"redis://127.0.0.1:6379/0"`, shared
    /// by every node that names the same URL and namespace.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = wheel_durable::DurableTimers::builder().redis("redis://127.0.0.1:6379/0");
    /// # drop(b);
    /// ```
    pub fn redis(self, url: &str) -> Self {
        self.choose(Choice::Redis(Servers::One(url.to_owned())))
    }

    /// The Redis store in a Redis Cluster, reached through any of `nodes`
    /// (URLs of some of its nodes, e.g. `"redis://10.0.0.1:7000"`; database
    /// 0, the only one a cluster has). The store follows the cluster as it
    /// changes: a reshard (`MOVED`, `TRYAGAIN` while a slot migrates) or a
    /// failover (a master gone, its replica promoted) makes calls wait and
    /// retry, within [`unavailable_after`](Self::unavailable_after).
    ///
    /// A namespace keeps every key in one hash slot, so namespaces spread
    /// over the masters; to spread one namespace, split it with
    /// [`partitions`](Self::partitions).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = wheel_durable::DurableTimers::builder()
    ///     .redis_cluster(["redis://10.0.0.1:7000", "redis://10.0.0.2:7000"])
    ///     .partitions(6);
    /// # drop(b);
    /// ```
    pub fn redis_cluster<I, S>(self, nodes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let urls = nodes.into_iter().map(|u| u.as_ref().to_owned()).collect();
        self.choose(Choice::Redis(Servers::Cluster(urls)))
    }

    /// Splits the namespace into `n` partitions (1, the default: not
    /// split; at most 256), each with its own hash slot, placed so that
    /// consecutive partitions fall in consecutive thirds, sixths, … of the
    /// slot space: `n` equal to (or a multiple of) the number of masters
    /// puts the same share on each master of a cluster whose slots are
    /// split evenly. Timers are placed by a hash of their key (a schedule's
    /// runs by the schedule's id); every node claims from every partition
    /// in turn; listings, counts and dead letters cover them all.
    ///
    /// Every node and client of a namespace must use the same count: the
    /// first to open the namespace marks it, and a later one with another
    /// count is refused with [`DurableError::Config`]. Flow keys can be
    /// paused in a partitioned namespace, but not limited (rate,
    /// parallelism, breaker): those are checked atomically with each
    /// start, and a flow key's timers lie in every partition. A batch
    /// `add` is atomic within each partition, not across them.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel_durable::{DurableError, DurableTimers};
    ///
    /// let b = DurableTimers::builder()
    ///     .redis_cluster(["redis://127.0.0.1:7000"])
    ///     .partitions(3);
    /// # drop(b);
    /// // The embedded store is one file: nothing to split.
    /// # #[cfg(feature = "embedded")]
    /// # {
    /// let dir = tempfile::tempdir().unwrap();
    /// let e = DurableTimers::builder()
    ///     .embedded(dir.path().join("timers"))
    ///     .partitions(3)
    ///     .build()
    ///     .unwrap_err();
    /// assert!(matches!(e, DurableError::Config(_)));
    /// # }
    /// ```
    pub fn partitions(mut self, n: u32) -> Self {
        self.partitions = n;
        self
    }

    pub(super) fn open_redis(&self, servers: Servers) -> Result<Arc<dyn Store>, DurableError> {
        let options = |part| Options {
            servers: servers.clone(),
            namespace: self.namespace.clone(),
            part,
            clock: self.clock.clone(),
            window: self.window_ms(),
            unavailable_after: self.unavailable_after,
            replicas: match self.replicas {
                (0, _) => None,
                (wanted, timeout) => Some(Replicas { wanted, timeout }),
            },
        };
        let count = self.partitions;
        if count <= 1 {
            return Ok(Arc::new(RedisStore::open(options(Part::WHOLE))?));
        }
        let parts = (0..count)
            .map(|index| RedisStore::open(options(Part { index, count })))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Arc::new(Partitioned::new(parts)))
    }
}

#[cfg(test)]
mod tests {
    use crate::{DurableError, DurableTimers};

    fn refused(b: crate::DurableTimersBuilder) -> bool {
        matches!(b.build(), Err(DurableError::Config(_)))
    }

    #[test]
    fn impossible_cluster_settings_are_refused_before_connecting() {
        // Port 1 has no server: each refusal comes before any connection.
        let node = ["redis://127.0.0.1:1"];
        let b = || DurableTimers::builder().redis_cluster(node);
        assert!(refused(b().partitions(0)));
        assert!(refused(b().partitions(257)));
        assert!(refused(
            DurableTimers::builder().redis_cluster(Vec::<String>::new())
        ));
        assert!(refused(
            DurableTimers::builder().redis_cluster(["redis://127.0.0.1:1/3"])
        ));
        assert!(refused(
            DurableTimers::builder().redis_cluster(["not a url"])
        ));
        // In range, it gets as far as connecting, and finds nobody.
        let e = b()
            .partitions(256)
            .unavailable_after(std::time::Duration::from_millis(50))
            .build()
            .unwrap_err();
        assert!(matches!(e, DurableError::Unavailable(_)), "{e:?}");
    }
}
