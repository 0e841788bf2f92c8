//! The full run repeats every server run (three times) and reports, for
//! each figure, the run in the middle: [`single`] picks, row by row, the
//! single-server run with the median figure of that row, and
//! [`lateness`] the callback run with the median p99. A run whose check
//! failed is reported instead, whatever its figure, so a repeat never
//! hides a failure. The ratio to the library is the median of the runs'
//! own ratios ([`ratio`]): each run measures the server and the library
//! back to back, on the same machine state. The kill runs report the
//! latest takeover of all ([`kill`]): that row states a bound.

use crate::server::fleet::FleetRun;
use crate::server::load::{LibraryAdds, Loaded, SingleServer};
use crate::workloads::Check;

/// The index of the median of the figures given (the lower of the two
/// middle ones for an even count), `None` when none is.
fn median_index(figures: &[Option<f64>]) -> Option<usize> {
    let mut given: Vec<(usize, f64)> = figures
        .iter()
        .enumerate()
        .filter_map(|(i, f)| f.map(|f| (i, f)))
        .collect();
    given.sort_by(|a, b| a.1.total_cmp(&b.1));
    given
        .get(given.len().saturating_sub(1) / 2)
        .map(|(i, _)| *i)
}

/// The load to report: the first whose check failed, else the median by
/// timers per second.
fn load(runs: &[Option<&Loaded>]) -> Option<Loaded> {
    if let Some(bad) = runs.iter().flatten().find(|l| l.check() != Check::Passed) {
        return Some((*bad).clone());
    }
    let rates: Vec<Option<f64>> = runs.iter().map(|l| l.map(Loaded::timers_per_sec)).collect();
    median_index(&rates).and_then(|i| runs[i].cloned())
}

/// One single-server run made of the runs' median rows; the first run's
/// error if none ran.
pub fn single(runs: Vec<Result<SingleServer, String>>) -> Result<SingleServer, String> {
    let ok: Vec<&SingleServer> = runs.iter().filter_map(|r| r.as_ref().ok()).collect();
    let Some(first) = ok.first() else {
        return runs.into_iter().next().unwrap_or(Err("no run".into()));
    };
    let adds: Vec<Option<&Loaded>> = ok
        .iter()
        .map(|s| s.adds.as_ref().ok().and_then(Option::as_ref))
        .collect();
    let batches: Vec<Option<&Loaded>> = ok
        .iter()
        .map(|s| s.batches.as_ref().ok().and_then(Option::as_ref))
        .collect();
    let rss = |pick: &dyn Fn(&SingleServer) -> Option<u64>| {
        let figures: Vec<Option<f64>> = ok.iter().map(|s| pick(s).map(|b| b as f64)).collect();
        median_index(&figures)
    };
    let fresh = rss(&|s| s.idle_fresh.as_ref().ok().map(|i| i.rss));
    let loaded = rss(&|s| s.idle_loaded.as_ref().ok().map(|(i, _)| i.rss));
    let library: Vec<Option<f64>> = ok
        .iter()
        .map(|s| s.library.as_ref().ok().and_then(|l| l.map(|l| l.per_sec)))
        .collect();
    let library = median_index(&library);
    Ok(SingleServer {
        idle_fresh: fresh.map_or_else(|| first.idle_fresh.clone(), |i| ok[i].idle_fresh.clone()),
        adds: first.adds.clone().map(|a| a.and(load(&adds))),
        batches: first.batches.clone().map(|b| b.and(load(&batches))),
        idle_loaded: loaded
            .map_or_else(|| first.idle_loaded.clone(), |i| ok[i].idle_loaded.clone()),
        stopped_cleanly: ok.iter().all(|s| s.stopped_cleanly),
        library: library.map_or_else(|| first.library.clone(), |i| ok[i].library.clone()),
    })
}

/// The median of the runs' ratios of the server's one-timer adds to the
/// library's: `(server, library)` per second of that run.
pub fn ratio(runs: &[Result<SingleServer, String>]) -> Option<(Loaded, LibraryAdds)> {
    let pairs: Vec<Option<(&Loaded, LibraryAdds)>> = runs
        .iter()
        .map(|r| {
            let s = r.as_ref().ok()?;
            let adds = s.adds.as_ref().ok()?.as_ref()?;
            let lib = (*s.library.as_ref().ok()?)?;
            (lib.per_sec > 0.0).then_some((adds, lib))
        })
        .collect();
    let ratios: Vec<Option<f64>> = pairs
        .iter()
        .map(|p| p.map(|(a, l)| a.timers_per_sec() / l.per_sec))
        .collect();
    median_index(&ratios).and_then(|i| pairs[i].map(|(a, l)| (a.clone(), l)))
}

/// The callback run to report: the first that failed its check, else the
/// median by lateness p99.
pub fn lateness(runs: Vec<Result<FleetRun, String>>) -> Result<FleetRun, String> {
    pick(runs, |r| r.tally.lateness_ms(99.0), false)
}

/// The kill run to report: the first that failed its check, else the one
/// whose latest timer came latest.
pub fn kill(runs: Vec<Result<FleetRun, String>>) -> Result<FleetRun, String> {
    pick(runs, FleetRun::max_late_ms, true)
}

fn pick(
    runs: Vec<Result<FleetRun, String>>,
    figure: impl Fn(&FleetRun) -> Option<f64>,
    worst: bool,
) -> Result<FleetRun, String> {
    if let Some(i) = runs
        .iter()
        .position(|r| r.as_ref().is_ok_and(|r| r.check() != Check::Passed))
    {
        return runs.into_iter().nth(i).unwrap_or(Err("no run".into()));
    }
    let figures: Vec<Option<f64>> = runs
        .iter()
        .map(|r| r.as_ref().ok().and_then(&figure))
        .collect();
    let i = if worst {
        figures
            .iter()
            .enumerate()
            .filter_map(|(i, f)| f.map(|f| (i, f)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(i, _)| i)
    } else {
        median_index(&figures)
    };
    // No figure at all: the first run says why (its error, or no arrivals).
    let i = i.unwrap_or(0);
    runs.into_iter().nth(i).unwrap_or(Err("no run".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_is_the_middle_figure_among_those_given() {
        assert_eq!(median_index(&[Some(3.0), Some(1.0), Some(2.0)]), Some(2));
        assert_eq!(median_index(&[Some(3.0), None, Some(1.0)]), Some(2));
        assert_eq!(median_index(&[Some(5.0)]), Some(0));
        assert_eq!(median_index(&[None, None]), None);
        assert_eq!(median_index(&[]), None);
    }
}
