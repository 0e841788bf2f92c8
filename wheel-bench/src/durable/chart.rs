//! The durable section's chart: for each rate, the distribution (CDF) of
//! how far each handler started from its due time, one line per
//! implementation, on a log axis of milliseconds. Distance, not signed
//! lateness, so that early and late fit on one log axis; a line whose
//! timers mostly ran early says so in its legend. A line's points are
//! (distance in ms, fraction of timers at most that far), increasing in
//! both.

use plotters::prelude::*;
use std::path::Path;

use super::Summary;
use crate::chart::{Area, Panel, Series, draw_panels};

/// The smallest distance drawn, ms: closer starts are drawn at it.
const FLOOR_MS: f64 = 0.01;
/// Points per line at most.
const POINTS: usize = 200;
const PANEL_W: u32 = 560;
const PANEL_H: u32 = 420;
/// Legend entries per row (the peer's long name gets a row of its own).
const LEGEND_PER_ROW: usize = 3;

/// A line for `s`, named `name` (with "(early)" when most ran early).
pub fn series(name: &str, s: &Summary) -> Series {
    let mut d: Vec<f64> = s
        .lateness
        .iter()
        .map(|ns| (ns.unsigned_abs() as f64 / 1e6).max(FLOOR_MS))
        .collect();
    d.sort_by(f64::total_cmp);
    let n = d.len();
    let step = n.div_ceil(POINTS).max(1);
    let mut points: Vec<(f64, f64)> = (step - 1..n)
        .step_by(step)
        .map(|i| (d[i], (i + 1) as f64 / n as f64))
        .collect();
    if let Some(&last) = d.last() {
        if points.last().map(|p| p.1) != Some(1.0) {
            points.push((last, 1.0));
        }
    }
    let early = s.early * 2 > s.lateness.len();
    Series {
        name: if early {
            format!("{name} (early)")
        } else {
            name.to_owned()
        },
        points,
    }
}

/// Draws `panels` side by side into an SVG at `path`, one legend (the
/// first panel's names) under them.
pub fn draw(path: &Path, panels: &[Panel]) -> Result<(), Box<dyn std::error::Error>> {
    draw_panels(path, panels, (PANEL_W, PANEL_H), LEGEND_PER_ROW, draw_panel)
}

fn draw_panel(area: &Area<'_>, panel: &Panel) -> Result<(), Box<dyn std::error::Error>> {
    let xs = panel
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0));
    let x1 = xs.fold(1.0f64, f64::max) * 2.0;
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d((FLOOR_MS..x1).log_scale(), 0.0..1.0)?;
    chart
        .configure_mesh()
        .light_line_style(WHITE)
        .x_desc("|handler start - due| (ms, log)")
        .y_desc("fraction of timers")
        .x_label_formatter(&|x| format!("{x}"))
        .draw()?;
    for (i, s) in panel.series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart.draw_series(LineSeries::new(s.points.clone(), color.stroke_width(2)))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_end_at_one_and_name_early_runs() {
        let s = Summary {
            lateness: (1..=1000).map(|i| -i * 1_000_000).rev().collect(),
            early: 1000,
            ..Summary::default()
        };
        let line = series("peer", &s);
        assert_eq!(line.name, "peer (early)");
        assert!(line.points.len() <= POINTS + 1);
        assert_eq!(line.points.last(), Some(&(1000.0, 1.0)));
        assert!(
            line.points
                .windows(2)
                .all(|w| w[0].0 <= w[1].0 && w[0].1 < w[1].1)
        );
        assert_eq!(series("x", &Summary::default()).points, vec![]);
    }

    #[test]
    fn draws_an_svg() {
        let path =
            std::env::temp_dir().join(format!("wheel-bench-dchart-{}.svg", std::process::id()));
        let s = Summary {
            lateness: vec![0, 1_000_000, 3_000_000],
            ..Summary::default()
        };
        let panel = Panel {
            title: "1 000/s".into(),
            series: vec![series("ours", &s)],
        };
        draw(&path, &[panel.clone(), panel]).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("1 000/s"));
        std::fs::remove_file(path).unwrap();
    }
}
