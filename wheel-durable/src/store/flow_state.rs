//! What a store keeps of flow control: which flow keys (and whether the
//! whole namespace) are paused, and the timers parked while their key is.
//!
//! The rules every store keeps (the model states them on its own):
//! - A start names each claim's flow key (the node derives it: see
//!   `crate::flow`). A claim that is due and still held with its fence,
//!   whose namespace is paused, is handed back (pending again, same due)
//!   and answered [`Start::Paused`](super::Start::Paused); one whose flow
//!   key is paused is **parked**: state [`TimerState::Parked`], out of the
//!   due index, in its key's parked index by `(due, key)`, also answered
//!   `Paused`. Its attempts are not counted: it never started. The empty
//!   flow key (a timer without one) is never paused.
//! - While the namespace is paused, `claim` still takes expired leases
//!   back but claims nothing and reports no next due time (a node then
//!   waits for its safety poll or a wake-up).
//! - A parked timer is claimed by nobody. `cancel` removes it (true,
//!   remembered as cancelled for the dedup window), `reschedule` makes it
//!   pending at the new due time, an `add` that replaces it makes it
//!   pending; `renew`, `finish`, `release` refuse it (it has no fence).
//! - Resuming a flow key clears its pause and makes up to
//!   [`UNPARK_BATCH`] of its parked timers pending again, earliest
//!   `(due, key)` first; if more are left, the key is marked resuming and
//!   each `claim`, once it has taken expired leases back and before it
//!   claims, makes up to `UNPARK_BATCH` more pending in all (resuming keys
//!   in byte order, each earliest first), so that no Redis script runs for long and a node
//!   that stops half-way loses nothing. Pausing a key again stops that.
//! - Resuming the namespace clears its pause; its timers were never
//!   parked, so the next claims take them in due order. Both resumes wake
//!   the nodes (the stores' notification, as for an add).
//! - [`FlowsState`] lists every key that is paused or has parked timers,
//!   in byte order, with its parked count.
//!
//! Node state: none (what the store answers).

/// Parked timers made pending again at most per resume and per claim.
pub(crate) const UNPARK_BATCH: usize = 1000;

/// Bytes a flow key may have at most.
pub(crate) const MAX_FLOW_KEY: usize = 512;

/// What a store answers about the paused flow keys.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FlowsState {
    /// Whether the whole namespace is paused.
    pub(crate) paused: bool,
    /// Every flow key paused or with parked timers, in byte order.
    pub(crate) keys: Vec<FlowEntry>,
}

/// One flow key as the store holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FlowEntry {
    pub(crate) key: String,
    pub(crate) paused: bool,
    /// Its parked timers (still parked while it resumes).
    pub(crate) parked: u64,
}
