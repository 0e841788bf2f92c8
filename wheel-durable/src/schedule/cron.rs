//! The cron recurrence in an IANA time zone, and the DST rule it keeps.
//!
//! `croner` searches the wall clock; this wrapper makes its answers follow
//! the rule in the module docs for every expression:
//!
//! - *Fixed-time* (no `*` and no step in the second, minute and hour
//!   fields; lists and ranges count as fixed): a wall time in a
//!   spring-forward gap runs once, at the first instant after the gap; a
//!   wall time in a fall-back overlap runs once, in its first pass.
//!   `croner` does this itself only for single values, so for lists and
//!   ranges the wrapper adds the gap run and drops second-pass matches.
//! - *Interval-like* (a `*` or a step in any of those fields): every wall
//!   time that exists, in both passes of an overlap, none in a gap. When
//!   the shift is a whole number of steps (`*/15` across a 60- or
//!   30-minute shift), that is exactly one step of real time apart.
//!
//! The time zones come from the tz database bundled into the binary
//! (`jiff`'s `tzdb-bundle-always`), never from the host's files.
//!
//! Node state: none (a parsed spec, immutable once built).

use croner::Cron;
use jiff::tz::{AmbiguousOffset, Offset, TimeZone, TimeZoneDatabase};
use jiff::{Timestamp, Zoned, civil};

use super::SpecError;
use super::instant::{Ms, max_ms};

/// A parsed cron expression in a resolved time zone.
#[derive(Debug, Clone)]
pub(crate) struct CronSpec {
    pub(crate) expression: String,
    pub(crate) zone: String,
    tz: TimeZone,
    cron: Cron,
    /// Fixed-time (see the module docs); interval-like otherwise.
    fixed: bool,
}

impl PartialEq for CronSpec {
    fn eq(&self, other: &CronSpec) -> bool {
        self.expression == other.expression && self.zone == other.zone
    }
}

impl Eq for CronSpec {}

impl CronSpec {
    /// Parses `expression` and resolves `zone` in the bundled database.
    pub(crate) fn new(expression: &str, zone: &str) -> Result<CronSpec, SpecError> {
        let cron = super::cron_parse::parse(expression)?;
        let tz = TimeZoneDatabase::bundled()
            .get(zone)
            .map_err(|_| SpecError::UnknownZone {
                zone: zone.to_owned(),
            })?;
        let p = &cron.pattern;
        let moves = |c: &croner::CronComponent| c.from_wildcard || c.step != 1;
        let fixed = !(moves(&p.seconds) || moves(&p.minutes) || moves(&p.hours));
        let spec = CronSpec {
            expression: expression.to_owned(),
            zone: zone.to_owned(),
            tz,
            cron,
            fixed,
        };
        if spec.next_after(-1).is_none() {
            return Err(SpecError::CronNeverMatches {
                expression: expression.to_owned(),
            });
        }
        Ok(spec)
    }

    /// Whether the DST rule treats this spec as fixed-time.
    #[cfg(test)]
    pub(crate) fn is_fixed(&self) -> bool {
        self.fixed
    }

    /// The first run strictly after `t` (`t` in `[-1, MAX_MILLIS]`).
    pub(crate) fn next_after(&self, t: Ms) -> Option<Ms> {
        let mut from = t.max(-1);
        loop {
            let found = self.raw_next(from)?;
            if self.fixed {
                if let Some(gap) = self.gap_run(from, found) {
                    return Some(gap);
                }
                if self.is_second_pass(found) {
                    // The first pass ran (or was before `t`): the repeat
                    // of the same wall time does not run again.
                    from = found;
                    continue;
                }
            }
            return (found <= max_ms()).then_some(found);
        }
    }

    /// The last run strictly before `t`.
    ///
    /// `croner` searches backwards by its own rule; its answer is only a
    /// starting point, and the runs from it up to `t` are walked forwards
    /// with [`next_after`](Self::next_after), so the answer is always one
    /// of the forward sequence.
    pub(crate) fn prev_before(&self, t: Ms) -> Option<Ms> {
        let mut probe = t.min(max_ms() + 1);
        // A few rounds: each moves `probe` to an earlier `croner` match.
        for _ in 0..8 {
            let start = self.raw_prev(probe)?;
            let mut best = None;
            let mut at = start - 1;
            while let Some(next) = self.next_after(at).filter(|n| *n < t) {
                best = Some(next);
                at = next;
            }
            if best.is_some() {
                return best;
            }
            probe = start;
        }
        None
    }

    fn zoned(&self, ms: Ms) -> Option<Zoned> {
        Some(
            Timestamp::from_millisecond(ms)
                .ok()?
                .to_zoned(self.tz.clone()),
        )
    }

    /// `croner`'s next match strictly after `t`, by its own DST rule.
    fn raw_next(&self, t: Ms) -> Option<Ms> {
        let found = self
            .cron
            .find_next_occurrence(&self.zoned(t)?, false)
            .ok()?;
        Some(found.timestamp().as_millisecond())
    }

    /// `croner`'s previous match strictly before `t` (a whole second).
    fn raw_prev(&self, t: Ms) -> Option<Ms> {
        // `croner` compares whole seconds: from `t` rounded up, "strictly
        // before" still excludes `t`'s own second only when `t` is whole.
        let up = t.div_euclid(1_000) * 1_000 + if t.rem_euclid(1_000) == 0 { 0 } else { 1_000 };
        let found = self
            .cron
            .find_previous_occurrence(&self.zoned(up)?, false)
            .ok()?;
        let ms = found.timestamp().as_millisecond();
        (ms >= 0).then_some(ms)
    }

    /// The first spring-forward gap in `(from, until]` that swallows a wall
    /// time the expression names: its end is that wall time's run.
    fn gap_run(&self, from: Ms, until: Ms) -> Option<Ms> {
        let start = Timestamp::from_millisecond(from).ok()?;
        let mut before = self.tz.to_offset(start);
        for transition in self.tz.following(start) {
            let at = transition.timestamp().as_millisecond();
            if at > until {
                return None;
            }
            let after = transition.offset();
            if at > from
                && after > before
                && self.matches_between(before, after, transition.timestamp())
            {
                return Some(at);
            }
            before = after;
        }
        None
    }

    /// Whether a wall time in `[at in before, at in after)` matches.
    fn matches_between(&self, before: Offset, after: Offset, at: Timestamp) -> bool {
        let (from, to) = (before.to_datetime(at), after.to_datetime(at));
        self.cron
            .find_next_occurrence::<civil::DateTime>(&from, true)
            .is_ok_and(|m| m < to)
    }

    /// Whether `ms` is the second pass of a wall time that happens twice.
    fn is_second_pass(&self, ms: Ms) -> bool {
        let Ok(at) = Timestamp::from_millisecond(ms) else {
            return false;
        };
        let wall = self.tz.to_datetime(at);
        match self.tz.to_ambiguous_timestamp(wall).offset() {
            AmbiguousOffset::Fold { before, after } => {
                before != after && self.tz.to_offset(at) == after
            }
            _ => false,
        }
    }
}
