//! The workloads, each written once: [`single`] over [`crate::peers::TimerQueue`],
//! [`threaded`] over [`crate::threaded::ThreadedTimer`], [`delay_queue`] for the
//! `DelayQueue` comparison.
//!
//! Every run checks the implementation's own output and reports a [`Check`]; a
//! failed check is shown in the tables, never hidden.

pub mod delay_queue;
pub mod single;
pub mod threaded;

/// The outcome of checking one run's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// Every timer fired exactly once, none early, none lost (or, for cancel
    /// workloads, every cancel succeeded and nothing fired).
    Passed,
    /// What went wrong, with counts.
    Failed(String),
    /// Not a timer (the floor) or nothing checkable in this workload.
    NotApplicable,
}

impl Check {
    /// Fold a list of error counts into a check: `Passed` if all are zero.
    pub fn from_errors(errors: &[(&str, u64)]) -> Check {
        let bad: Vec<String> = errors
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(what, n)| format!("{n} {what}"))
            .collect();
        if bad.is_empty() {
            Check::Passed
        } else {
            Check::Failed(bad.join(", "))
        }
    }

    /// Combine the checks of several runs: the first failure wins.
    pub fn merge(self, other: Check) -> Check {
        match (self, other) {
            (Check::Failed(a), _) => Check::Failed(a),
            (_, Check::Failed(b)) => Check::Failed(b),
            (Check::NotApplicable, _) | (_, Check::NotApplicable) => Check::NotApplicable,
            _ => Check::Passed,
        }
    }

    /// Short text for the tables.
    pub fn label(&self) -> String {
        match self {
            Check::Passed => "ok".to_string(),
            Check::Failed(why) => format!("FAILED: {why}"),
            Check::NotApplicable => "n/a".to_string(),
        }
    }
}
