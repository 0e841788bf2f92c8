//! How the API shows a create that found its key remembered by the
//! dedup window, and the body of a create's `200`, which is either that
//! or the existing timer.

use serde::Serialize;
use utoipa::ToSchema;
use wheel_durable::{EndedHow, EndedTimer};

use crate::json::{Timer, format_time};

/// A timer that ended within the dedup window: nothing was added, and
/// this is how and when it ended.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct EndedOut {
    /// The key.
    pub(crate) key: String,
    /// How it ended: its callback succeeded (`done`), it was cancelled
    /// (`cancelled`), or it gave up and its dead letter was then cancelled
    /// (`dead`).
    pub(crate) outcome: EndedState,
    /// When it ended (for `dead`: when it gave up), RFC 3339.
    pub(crate) ended_at: String,
}

/// How a remembered timer ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum EndedState {
    /// Its callback succeeded.
    Done,
    /// It was cancelled.
    Cancelled,
    /// It gave up, and its dead letter was cancelled.
    Dead,
}

impl From<&EndedTimer> for EndedOut {
    fn from(e: &EndedTimer) -> EndedOut {
        let outcome = match e.how {
            EndedHow::Done => EndedState::Done,
            EndedHow::Cancelled => EndedState::Cancelled,
            // `Dead`, and whatever a later library adds.
            _ => EndedState::Dead,
        };
        EndedOut {
            key: e.key.clone(),
            outcome,
            ended_at: format_time(e.at),
        }
    }
}

/// The body of a `200` to a create: the existing timer, or how the one
/// with this key ended within the dedup window.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub(crate) enum CreateAnswer {
    /// A timer with this key and the same content exists.
    Existing(Timer),
    /// A timer with this key ended within the dedup window.
    Ended(EndedOut),
}
