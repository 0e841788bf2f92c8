//! The SVG chart: cost per operation against the number of pending timers, one
//! panel per single-threaded workload, log-log, one line per implementation.
//!
//! Only plotters' SVG backend is used, without its `ttf` feature: text becomes
//! SVG `<text>` elements that the viewer lays out with its own fonts, so drawing
//! needs no font files on the machine that runs the benchmark.

use plotters::coord::combinators::BindKeyPoints;
use plotters::prelude::*;
use std::path::Path;

/// One implementation's line.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// (x, y), increasing in x: (pending timers, ns per op) here; the
    /// durable chart's are described in [`crate::durable::chart`].
    pub points: Vec<(f64, f64)>,
}

/// One panel (a workload; a rate in the durable chart).
#[derive(Debug, Clone)]
pub struct Panel {
    /// Caption.
    pub title: String,
    /// Lines.
    pub series: Vec<Series>,
}

/// Pixel size of one panel.
const PANEL_W: u32 = 560;
const PANEL_H: u32 = 440;
/// Height of the legend strip under the panels, per legend row.
const LEGEND_ROW_H: u32 = 22;
/// Legend entries per row.
const LEGEND_PER_ROW: usize = 3;

/// Powers of ten covering `lo..hi` (the axis key points).
fn decades(lo: f64, hi: f64) -> Vec<f64> {
    let mut v = Vec::new();
    let mut p = 10f64.powf(lo.log10().floor());
    while p <= hi {
        if p >= lo {
            v.push(p);
        }
        p *= 10.0;
    }
    v
}

/// "10K", "1M" for axis labels.
fn count_label(x: f64) -> String {
    if x >= 1e6 {
        format!("{}M", (x / 1e6).round())
    } else if x >= 1e3 {
        format!("{}K", (x / 1e3).round())
    } else {
        format!("{}", x.round())
    }
}

/// The height of a legend of `n` entries, `per_row` a row.
fn legend_height(n: usize, per_row: usize) -> u32 {
    LEGEND_ROW_H * n.div_ceil(per_row.max(1)) as u32 + 10
}

/// Draws a legend into `area`, `width` wide: a short line in each series'
/// colour (the palette's, by position) and its name, `per_row` a row.
fn legend(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    names: &[&str],
    per_row: usize,
    width: u32,
) -> Result<(), Box<dyn std::error::Error>> {
    let per_row = per_row.max(1);
    let entry_w = (width as usize / per_row) as i32;
    for (i, name) in names.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let x = 20 + (i % per_row) as i32 * entry_w;
        let y = 10 + (i / per_row) as i32 * LEGEND_ROW_H as i32;
        area.draw(&PathElement::new(
            vec![(x, y), (x + 24, y)],
            color.stroke_width(3),
        ))?;
        area.draw(&Text::new(
            name.to_string(),
            (x + 32, y - 7),
            ("sans-serif", 14).into_font(),
        ))?;
    }
    Ok(())
}

/// The area one panel is drawn into.
pub type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// Draws `panels` side by side into an SVG file at `path`, each `size`
/// pixels, with one legend (the series names of the first panel, `per_row`
/// a row) under them; `draw_panel` draws one panel into its area.
pub fn draw_panels(
    path: &Path,
    panels: &[Panel],
    size: (u32, u32),
    per_row: usize,
    draw_panel: impl Fn(&Area<'_>, &Panel) -> Result<(), Box<dyn std::error::Error>>,
) -> Result<(), Box<dyn std::error::Error>> {
    let width = size.0 * panels.len().max(1) as u32;
    let names: Vec<&str> = panels
        .first()
        .map(|p| p.series.iter().map(|s| s.name.as_str()).collect())
        .unwrap_or_default();
    let height = size.1 + legend_height(names.len(), per_row);
    let root = SVGBackend::new(path, (width, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let (plots, legend_area) = root.split_vertically(size.1);
    legend(&legend_area, &names, per_row, width)?;
    let areas = plots.split_evenly((1, panels.len().max(1)));
    for (area, panel) in areas.iter().zip(panels) {
        draw_panel(area, panel)?;
    }
    root.present()?;
    Ok(())
}

/// Draw `panels` side by side into an SVG file at `path`, with one legend (the
/// series names of the first panel) under them.
pub fn draw(path: &Path, panels: &[Panel]) -> Result<(), Box<dyn std::error::Error>> {
    draw_panels(path, panels, (PANEL_W, PANEL_H), LEGEND_PER_ROW, cost_panel)
}

/// One panel of cost per operation against pending timers, log-log.
fn cost_panel(area: &Area<'_>, panel: &Panel) -> Result<(), Box<dyn std::error::Error>> {
    let points = || panel.series.iter().flat_map(|s| s.points.iter());
    let finite = |v: &f64| v.is_finite() && *v > 0.0;
    let xs: Vec<f64> = points().map(|p| p.0).filter(finite).collect();
    let ys: Vec<f64> = points().map(|p| p.1).filter(finite).collect();
    if xs.is_empty() || ys.is_empty() {
        return Ok(());
    }
    let fold = |v: &[f64], f: fn(f64, f64) -> f64, init: f64| v.iter().copied().fold(init, f);
    let (x0, x1) = (
        fold(&xs, f64::min, f64::MAX) / 1.5,
        fold(&xs, f64::max, 0.0) * 1.5,
    );
    let (y0, y1) = (
        fold(&ys, f64::min, f64::MAX) / 1.5,
        fold(&ys, f64::max, 0.0) * 2.0,
    );
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(
            (x0..x1).log_scale().with_key_points(decades(x0, x1)),
            (y0..y1).log_scale().with_key_points(decades(y0, y1)),
        )?;
    chart
        .configure_mesh()
        .light_line_style(WHITE)
        .x_desc("pending timers")
        .y_desc("ns per operation")
        .x_label_formatter(&|x| count_label(*x))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .draw()?;
    for (i, s) in panel.series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .copied()
            .filter(|(x, y)| finite(x) && finite(y))
            .collect();
        chart.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?;
        chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decade_key_points() {
        assert_eq!(decades(500.0, 2e4), vec![1e3, 1e4]);
        assert_eq!(decades(1.0, 10.0), vec![1.0, 10.0]);
    }

    #[test]
    fn labels() {
        assert_eq!(count_label(1_000.0), "1K");
        assert_eq!(count_label(10_000_000.0), "10M");
        assert_eq!(count_label(500.0), "500");
    }

    #[test]
    fn draws_an_svg_with_text() {
        let path =
            std::env::temp_dir().join(format!("wheel-bench-chart-{}.svg", std::process::id()));
        let panel = Panel {
            title: "insert+cancel".into(),
            series: vec![
                Series {
                    name: "a".into(),
                    points: vec![(1e3, 10.0), (1e6, 20.0)],
                },
                Series {
                    name: "b".into(),
                    points: vec![(1e3, 100.0), (1e6, f64::NAN)],
                },
            ],
        };
        draw(&path, &[panel.clone(), panel]).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("insert+cancel") && svg.contains("<text"));
        std::fs::remove_file(path).unwrap();
    }
}
