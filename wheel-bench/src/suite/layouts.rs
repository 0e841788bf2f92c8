//! The layouts mode: our wheel built with several level layouts, on the
//! three single-threaded workloads.

use super::{Progress, Workload, fmt_count};
use crate::peers::wheel::OurWheel;
use crate::report::{Table, ns};
use crate::stats::median;
use crate::workloads::Check;
use crate::workloads::single::{self, Churn, Inputs};
use wheel::WheelConfig;

/// Run the layout comparison: our wheel with several level layouts on the three
/// single-threaded workloads at `n` timers.
pub fn run_layouts(n: usize, runs: usize, churn_steps: usize, progress: &Progress) -> Table {
    let layouts: Vec<Vec<u32>> = vec![
        vec![6; 6],
        vec![6; 10],
        vec![6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 4],
        vec![6; 11],
        vec![8; 8],
        vec![10; 6],
        vec![10, 10, 10, 10, 10, 10, 4],
        vec![12, 12, 12, 12, 16],
        vec![16; 4],
    ];
    let mut t = Table::new(
        &format!("Wheel layouts at N={}", fmt_count(n)),
        &format!(
            "Our wheel built with `WheelConfig::new(&layout)` (not pre-sized), on the three \
             single-threaded workloads; ns per op, median of {runs} runs after one untimed warm-up \
             run; churn times {} steps.",
            fmt_count(churn_steps)
        ),
        &[
            "layout",
            "bits",
            "insert+cancel",
            "insert+expire",
            "churn",
            "check",
        ],
    );
    let inputs = Inputs::new(n, 9_001);
    for layout in layouts {
        let name = format!("{layout:?}");
        let bits: u32 = layout.iter().sum();
        let config = match WheelConfig::new(&layout) {
            Ok(c) => c,
            Err(e) => {
                t.row(vec![
                    name,
                    bits.to_string(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    format!("rejected: {e}"),
                ]);
                continue;
            }
        };
        let mut row = vec![name.clone(), bits.to_string()];
        let mut check = Check::Passed;
        for w in Workload::ALL {
            let mut samples = Vec::new();
            // One untimed warm-up run first (see `run_single`).
            for r in 0..=runs {
                let q = OurWheel::with_config(config.clone());
                let o = match w {
                    Workload::InsertCancel => single::insert_cancel(q, &inputs),
                    Workload::InsertExpire => single::insert_expire(q, &inputs),
                    Workload::Churn => single::churn(q, &Churn::new(n, churn_steps, 9_002)),
                };
                if r > 0 {
                    samples.push(o.ns_per_op);
                }
                check = check.merge(o.check);
            }
            let m = median(&samples);
            progress.say(format!("layout {name} {}: {} ns/op", w.name(), ns(m)));
            row.push(ns(m));
        }
        row.push(check.label());
        t.row(row);
    }
    t
}
