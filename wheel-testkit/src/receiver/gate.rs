//! A gate that held replies wait at until it opens: when the test opens
//! it, when as many replies wait at it at once as its threshold, or, so
//! that nothing hangs, when a reply has waited [`LIVENESS`]. Once open it
//! stays open, and later replies pass at once.
//!
//! Invariants: `open` only goes from false to true, under the lock, and
//! every change to it wakes all waiters; a waiter registers for the wake
//! before it reads `open`, so no opening is missed.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::Notify;

use crate::LIVENESS;

/// A gate replies wait at (see [`Reply::until`](crate::Reply::until)).
/// Clones share one gate.
///
/// # Examples
///
/// ```
/// use wheel_testkit::{Gate, Receiver};
///
/// let gate = Gate::default();
/// let rx = Receiver::gated(&gate); // every request is held...
/// gate.open(); // ...until now
/// assert!(gate.is_open());
/// ```
#[derive(Clone, Default)]
pub struct Gate(Arc<Shared>);

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    changed: Notify,
}

#[derive(Default)]
struct State {
    open: bool,
    waiting: usize,
    threshold: Option<usize>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.0.state.lock().unwrap();
        f.debug_struct("Gate")
            .field("open", &st.open)
            .field("waiting", &st.waiting)
            .field("threshold", &st.threshold)
            .finish()
    }
}

impl Gate {
    /// A gate that opens itself once `threshold` replies wait at it at once.
    ///
    /// # Examples
    ///
    /// ```
    /// let gate = wheel_testkit::Gate::opening_at(1_500);
    /// assert!(!gate.is_open());
    /// ```
    pub fn opening_at(threshold: usize) -> Gate {
        let gate = Gate::default();
        gate.0.state.lock().unwrap().threshold = Some(threshold);
        gate
    }

    /// Opens the gate: every waiting reply goes out, and later ones pass.
    ///
    /// # Examples
    ///
    /// ```
    /// let gate = wheel_testkit::Gate::default();
    /// gate.open();
    /// assert!(gate.is_open());
    /// ```
    pub fn open(&self) {
        self.0.state.lock().unwrap().open = true;
        self.0.changed.notify_waiters();
    }

    /// Whether the gate is open.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!wheel_testkit::Gate::default().is_open());
    /// ```
    pub fn is_open(&self) -> bool {
        self.0.state.lock().unwrap().open
    }

    /// Waits until the gate opens, or [`LIVENESS`] passes.
    pub(crate) async fn wait(&self) {
        let until = Instant::now() + LIVENESS;
        let _waiting = Waiting::enter(&self.0);
        loop {
            let changed = self.0.changed.notified();
            tokio::pin!(changed);
            // Registered before the read: an `open` after it wakes us.
            changed.as_mut().enable();
            let left = until.saturating_duration_since(Instant::now());
            if self.is_open() || left.is_zero() {
                break;
            }
            let _ = tokio::time::timeout(left, changed).await;
        }
    }
}

/// One reply counted as waiting at a gate until dropped: a reply whose
/// client hung up is dropped mid-wait and stops counting then.
struct Waiting<'a>(&'a Shared);

impl<'a> Waiting<'a> {
    fn enter(shared: &'a Shared) -> Waiting<'a> {
        let mut st = shared.state.lock().unwrap();
        st.waiting += 1;
        if st.threshold.is_some_and(|t| st.waiting >= t) {
            st.open = true;
            shared.changed.notify_waiters();
        }
        Waiting(shared)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.state.lock().unwrap().waiting -= 1;
    }
}
