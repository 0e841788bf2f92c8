//! The table of one namespace on a Redis Cluster: on one master, and
//! split into partitions over every master.

use super::tables::ms2;
use crate::durable::cluster::{ClusterParams, ClusterRun};
use crate::report::Table;
use crate::suite::fmt_count;

/// The table, without rows.
pub(super) fn cluster(p: &ClusterParams) -> Table {
    Table::new(
        "Durable timers: one namespace on a Redis Cluster",
        &format!(
            "Ours on a fresh Redis Cluster of {} masters (no replicas) on this machine's loopback, \
             for each row: {} nodes fire {} timers due at one instant (added with `add_many` \
             while they run). One master: the namespace undivided, its keys in one hash slot, so \
             one master does all of Redis's work. Partitioned: the namespace split into one \
             partition per master (`partitions`), each node claiming from every partition in \
             turn. Fired/s from the first start to the last; masters' CPU: every master's CPU \
             over the same span, summed (`INFO cpu`); per core: fired/s over that sum. Every \
             master, every node and the bench share this machine's cores, so the fire rate \
             grows with the masters only where each has a core of its own; the rate per Redis \
             core used is the figure that carries to such a machine.",
            p.masters,
            p.nodes,
            fmt_count(p.fire)
        ),
        &[
            "layout",
            "partitions",
            "fired/s",
            "p50 late ms",
            "p99 late ms",
            "masters' CPU",
            "fired/s per Redis core",
            "check",
        ],
    )
}

/// One run's row.
pub(super) fn cluster_row(r: &ClusterRun) -> Vec<String> {
    let layout = if r.partitions <= 1 {
        "one master".to_string()
    } else {
        format!("partitioned over {}", r.partitions)
    };
    let s = &r.rate.summary;
    vec![
        layout,
        r.partitions.to_string(),
        r.rate.cell(),
        ms2(s.pct(50.0)),
        ms2(s.pct(99.0)),
        r.rate.cpu_cell(),
        r.per_core().map_or("-".into(), |v| format!("{v:.0}")),
        s.check().label(),
    ]
}
