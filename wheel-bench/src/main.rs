//! `cargo run --release -p wheel-bench -- [OPTIONS]` (`--help` lists them).
//!
//! Runs our timers and their peers on the same seeded workloads, prints a table
//! per workload and, on a full run, writes them (with the machine's facts) into
//! `docs/benchmarks.md`, plus the charts `docs/benchmarks.svg` and
//! `docs/benchmarks-durable.svg`. A quick run (`--quick`) or a run of some
//! sections (`--only`) only prints unless `--write` is given, so that trying
//! the command leaves the committed report alone. See `docs/benchmarks.md` for what each workload does.

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser, ValueEnum};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use wheel_bench::report::{self, Meta, Table};
use wheel_bench::suite::{self, Progress, Results, Sections, Settings};

/// The comparison of wheel's timers with the timer implementations a user
/// would otherwise pick.
///
/// Runs them all on the same seeded workloads and prints a table per workload.
/// The full run also writes the tables, with the machine's facts, into a
/// Markdown file, and the charts beside it; a quick run writes only with
/// `--write`.
#[derive(Debug, Parser)]
#[command(name = "wheel-bench")]
struct Args {
    /// Small sizes (about four minutes on 2 cores), printed only (see --write);
    /// without it, the full run (N up to 10M; about eighteen minutes), printed
    /// and written
    #[arg(long)]
    quick: bool,
    /// Write a quick run's results too, where a full run writes them (--out,
    /// default docs/benchmarks.md and its charts), marked there as a quick
    /// run, its targets table at quick sizes; a full run writes without it
    #[arg(long, conflicts_with = "no_write")]
    write: bool,
    /// Write the results into PATH.md (between generated-section markers,
    /// keeping the rest of the file) and the charts beside it as PATH.svg and
    /// PATH-durable.svg [default: docs/benchmarks.md of this workspace]; a
    /// quick run needs --write with it
    #[arg(long, value_name = "PATH.md")]
    out: Option<PathBuf>,
    /// Print only (a full run; a quick run prints only unless --write)
    #[arg(long)]
    no_write: bool,
    /// Run only these sections (comma-separated); memory runs whenever single
    /// does, since its figures decide which large runs fit. Printed only
    /// unless --write: written, they replace every section's results
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    only: Option<Vec<Section>>,
    /// Compare candidate wheel layouts instead (N=1M; 100K with --quick),
    /// written into their own section of the same file
    #[arg(long, conflicts_with_all = ["only", "sizes", "runs"])]
    layouts: bool,
    /// Timer counts for the single-threaded workloads (comma-separated, e.g.
    /// 1000000,10000000), instead of the mode's
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = positive)]
    sizes: Option<Vec<usize>>,
    /// Runs per single-threaded and DelayQueue measurement, instead of the
    /// mode's
    #[arg(long, value_name = "N", value_parser = positive)]
    runs: Option<usize>,
    /// A node process of the durable section's kill workload (started by
    /// the section itself)
    #[arg(long, value_name = "SPEC", hide = true, exclusive = true)]
    durable_node: Option<String>,
}

/// A section of the comparison, for `--only`.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum Section {
    /// insert+cancel, insert+expire, churn
    Single,
    /// bytes per pending timer
    Memory,
    /// schedule+cancel, lateness, idle
    Threaded,
    /// DelayQueue insert+take and insert+remove
    Dq,
    /// durable timers (embedded, Redis) and the one-second Redis wheel
    Durable,
    /// HTTP callbacks of the durable timers and of the one-second Redis wheel
    Http,
    /// flow control's cost per callback on Redis, and dead letters replayed in bulk
    Flows,
    /// the wheel-server binary: adds over HTTP (wrk), idle, callbacks from 2 servers
    Server,
    /// durable recurring schedules (Redis, embedded) beside the in-memory schedule_repeating
    Schedules,
}

/// A count of at least 1; `_` may group its digits.
fn positive(s: &str) -> Result<usize, String> {
    match s.trim().replace('_', "").parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// The sections named by `--only`.
fn sections(only: &[Section]) -> Sections {
    let mut s = Sections {
        single: false,
        memory: false,
        threaded: false,
        delay_queue: false,
        durable: false,
        http: false,
        flows: false,
        server: false,
        schedules: false,
    };
    for section in only {
        match section {
            Section::Single => s.single = true,
            Section::Memory => s.memory = true,
            Section::Threaded => s.threaded = true,
            Section::Dq => s.delay_queue = true,
            Section::Durable => s.durable = true,
            Section::Http => s.http = true,
            Section::Flows => s.flows = true,
            Section::Server => s.server = true,
            Section::Schedules => s.schedules = true,
        }
    }
    s
}

fn default_out() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new("."))
        .join("docs")
        .join("benchmarks.md")
}

/// Whether the run writes its results: a full run of every section unless
/// `--no-write`; a quick run, or one of some sections (`--only`), only with
/// `--write`, since what it writes replaces the whole report's results.
fn writes(args: &Args) -> bool {
    if args.quick || args.only.is_some() {
        args.write
    } else {
        !args.no_write
    }
}

/// Rejects `--out` on a quick or partial run without `--write`: it would
/// write nothing, and silently printing only would look like a lost report.
fn check(args: &Args) -> Result<(), clap::Error> {
    let partial = args.quick || args.only.is_some();
    if partial && args.out.is_some() && !args.write && !args.no_write {
        return Err(Args::command().error(
            ErrorKind::MissingRequiredArgument,
            "--out on a quick run or with --only writes only with --write (add --write, or drop --out)",
        ));
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Err(e) = check(&args) {
        e.exit();
    }
    if let Some(spec) = &args.durable_node {
        return match wheel_bench::durable::node::run(spec) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("durable node: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let raw: Vec<String> = std::env::args().skip(1).collect();
    let command = format!("cargo run --release -p wheel-bench -- {}", raw.join(" "))
        .trim_end()
        .to_string();
    let meta = Meta::collect(command);
    let progress = Progress::new();
    let done = if args.layouts {
        layouts(&args, meta, &progress)
    } else {
        comparison(&args, meta, &progress)
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `--layouts`: the layout table, printed and written into its section.
fn layouts(args: &Args, mut meta: Meta, progress: &Progress) -> Result<(), String> {
    let (n, runs, steps) = if args.quick {
        (100_000, 3, 200_000)
    } else {
        (1_000_000, 5, 1_000_000)
    };
    let table = suite::run_layouts(n, runs, steps, progress);
    meta.elapsed_s = progress.elapsed().as_secs_f64();
    println!("{}", table.to_text());
    if !writes(args) {
        return Ok(());
    }
    let section = format!(
        "## Layouts\n\n{}\n{}",
        meta.to_markdown(),
        table.to_markdown()
    );
    write_section(&out_path(args), "layouts", &section)
}

/// The comparison: the sections asked for, printed, then written with the
/// chart.
fn comparison(args: &Args, mut meta: Meta, progress: &Progress) -> Result<(), String> {
    let settings = settings(args);
    let mut results = Results::default();
    let sec = settings.sections;
    if sec.memory || sec.single {
        // Memory first: its bytes-per-timer figures decide which large runs fit.
        suite::run_memory(&settings, progress, &mut results);
    }
    if sec.single {
        suite::run_single(&settings, progress, &mut results);
    }
    if sec.threaded {
        suite::run_threaded(&settings, progress, &mut results);
    }
    if sec.delay_queue {
        suite::run_delay_queue(&settings, progress, &mut results);
    }
    if sec.http {
        // Before durable: the durable targets table shows its figures.
        suite::run_http(&settings, progress, &mut results);
    }
    if sec.durable {
        suite::run_durable(&settings, progress, &mut results);
    }
    if sec.flows {
        suite::run_flows(&settings, progress, &mut results);
    }
    if sec.server {
        suite::run_server(&settings, progress, &mut results);
    }
    if sec.schedules {
        suite::run_schedules(&settings, progress, &mut results);
    }
    meta.elapsed_s = progress.elapsed().as_secs_f64();
    println!("{}", meta.to_markdown());
    for t in &results.tables {
        println!("{}", t.to_text());
    }
    if writes(args) {
        write_results(&out_path(args), &meta, &settings, &results)?;
    } else if args.quick {
        eprintln!("quick run: printed only (add --write to write the report and charts)");
    }
    ours_passed(&results.tables)
}

/// The mode's settings with the arguments' overrides.
fn settings(args: &Args) -> Settings {
    let mut settings = if args.quick {
        Settings::quick()
    } else {
        Settings::full()
    };
    if let Some(only) = &args.only {
        settings.sections = sections(only);
    }
    if let Some(sizes) = &args.sizes {
        settings.sizes = sizes.clone();
    }
    if let Some(runs) = args.runs {
        settings.runs = runs;
        settings.runs_large = runs;
        settings.dq_runs = runs;
    }
    settings
}

/// An error naming every row of ours that failed its own output check (a
/// timer early, lost, run twice, out of order...), so that the run, and CI,
/// fails. Peers that fail theirs (hhwt and the one-second Redis wheel fire
/// early by design) are a finding of the comparison and get a note on stderr.
fn ours_passed(tables: &[Table]) -> Result<(), String> {
    let mut ours = Vec::new();
    let mut peers = 0;
    for t in tables {
        for r in &t.rows {
            // A run that could not finish fills the row's second cell and
            // leaves the rest empty; one that finished has its check last.
            if !r.iter().skip(1).any(|c| c.starts_with("FAILED")) {
                continue;
            }
            match r.first() {
                Some(name) if is_ours(name) => ours.push(format!("{}: {name}", t.title)),
                _ => peers += 1,
            }
        }
    }
    if peers > 0 {
        eprintln!(
            "note: {peers} row(s) of peers failed their own output check (see the check column)"
        );
    }
    if ours.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "our implementation failed its own output check in: {}",
            ours.join("; ")
        ))
    }
}

/// Whether a row names one of our implementations ("wheel::Wheel (ours),
/// after a long churn", "ours, Redis, 3 nodes").
fn is_ours(name: &str) -> bool {
    name.starts_with("ours") || name.contains("(ours)")
}

fn out_path(args: &Args) -> PathBuf {
    args.out.clone().unwrap_or_else(default_out)
}

/// Writes the chart to `out` with the extension `.svg` (if there are
/// panels) and the results section into `out`.
fn write_results(
    out: &Path,
    meta: &Meta,
    settings: &Settings,
    results: &Results,
) -> Result<(), String> {
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    }
    let svg = out.with_extension("svg");
    let chart_name = if results.panels.is_empty() {
        None
    } else {
        wheel_bench::chart::draw(&svg, &results.panels)
            .map_err(|e| format!("drawing {}: {e}", svg.display()))?;
        eprintln!("wrote {}", svg.display());
        svg.file_name().map(|f| f.to_string_lossy().into_owned())
    };
    let note = if settings.quick {
        "Quick run (`--quick --write`): small sizes, few runs, noisy; the durable targets \
         are judged at quick sizes. The full sizes come from the same command without \
         `--quick`."
    } else {
        ""
    };
    let figures = durable_figure(out, results)?;
    let section =
        report::results_markdown(meta, note, &results.tables, chart_name.as_deref(), &figures);
    write_section(out, "results", &section)
}

/// Draws the durable section's chart beside `out` as `STEM-durable.svg`,
/// if the section ran.
fn durable_figure(out: &Path, results: &Results) -> Result<Vec<report::Figure>, String> {
    let Some((before, panels)) = &results.durable_chart else {
        return Ok(Vec::new());
    };
    let stem = out
        .file_stem()
        .map_or("benchmarks".into(), |s| s.to_string_lossy());
    let file = format!("{stem}-durable.svg");
    let svg = out.with_file_name(&file);
    wheel_bench::durable::chart::draw(&svg, panels)
        .map_err(|e| format!("drawing {}: {e}", svg.display()))?;
    eprintln!("wrote {}", svg.display());
    Ok(vec![report::Figure {
        before: *before,
        alt: "durable timers: distance of handler starts from due".into(),
        file,
    }])
}

/// Writes `section` between the markers named `name` in `out`.
fn write_section(out: &Path, name: &str, section: &str) -> Result<(), String> {
    report::write_markdown(out, name, section)
        .map_err(|e| format!("writing {}: {e}", out.display()))?;
    eprintln!("wrote {}", out.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Args, clap::Error> {
        Args::try_parse_from(std::iter::once("wheel-bench").chain(args.iter().copied()))
    }

    #[test]
    fn the_declaration_is_consistent() {
        Args::command().debug_assert();
    }

    #[test]
    fn no_flags_is_the_full_run_written_to_docs() {
        let args = parse(&[]).unwrap();
        let s = settings(&args);
        assert!(!s.quick && writes(&args) && !args.layouts);
        assert_eq!(s.sizes, Settings::full().sizes);
        assert_eq!(out_path(&args), default_out());
        assert!(out_path(&args).ends_with("docs/benchmarks.md"));
    }

    #[test]
    fn flags_override_the_mode() {
        let args = parse(&[
            "--quick",
            "--only",
            "single,dq",
            "--sizes",
            "1_000, 20000",
            "--runs",
            "7",
            "--out",
            "x/y.md",
            "--write",
        ])
        .unwrap();
        let s = settings(&args);
        assert!(s.quick && writes(&args));
        let sec = s.sections;
        assert!(sec.single && sec.delay_queue && !sec.memory && !sec.threaded);
        assert_eq!(s.sizes, vec![1_000, 20_000]);
        assert_eq!((s.runs, s.runs_large, s.dq_runs), (7, 7, 7));
        assert_eq!(out_path(&args), PathBuf::from("x/y.md"));
    }

    #[test]
    fn a_quick_run_writes_only_when_asked() {
        let quick = parse(&["--quick"]).unwrap();
        assert!(!writes(&quick));
        assert!(check(&quick).is_ok());
        let written = parse(&["--quick", "--write"]).unwrap();
        assert!(writes(&written));
        assert_eq!(out_path(&written), default_out());
        let layouts = parse(&["--layouts", "--quick"]).unwrap();
        assert!(!writes(&layouts));
        // The full run writes unless told not to; `--write` changes nothing.
        assert!(!writes(&parse(&["--no-write"]).unwrap()));
        assert!(writes(&parse(&["--write"]).unwrap()));
        // `--out` on a quick run without `--write` would write nothing.
        let lone_out = parse(&["--quick", "--out", "x/y.md"]).unwrap();
        let err = check(&lone_out).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::MissingRequiredArgument);
        assert!(check(&parse(&["--quick", "--out", "x/y.md", "--no-write"]).unwrap()).is_ok());
        assert!(check(&parse(&["--out", "x/y.md"]).unwrap()).is_ok());
        // Some sections alone would replace every section's results: only
        // when asked.
        assert!(!writes(&parse(&["--only", "flows"]).unwrap()));
        assert!(writes(&parse(&["--only", "flows", "--write"]).unwrap()));
        assert!(check(&parse(&["--only", "flows", "--out", "x/y.md"]).unwrap()).is_err());
    }

    #[test]
    fn bad_input_is_rejected() {
        let kind = |args: &[&str]| parse(args).unwrap_err().kind();
        assert_eq!(kind(&["--bogus"]), ErrorKind::UnknownArgument);
        assert_eq!(kind(&["--only", "single,foo"]), ErrorKind::InvalidValue);
        assert_eq!(kind(&["--runs", "0"]), ErrorKind::ValueValidation);
        assert_eq!(kind(&["--sizes", "10,x"]), ErrorKind::ValueValidation);
        assert_eq!(kind(&["--runs"]), ErrorKind::InvalidValue);
        assert_eq!(
            kind(&["--layouts", "--sizes", "10"]),
            ErrorKind::ArgumentConflict
        );
        assert!(parse(&["--layouts", "--quick", "--no-write"]).is_ok());
        assert_eq!(
            kind(&["--write", "--no-write"]),
            ErrorKind::ArgumentConflict
        );
        assert_eq!(
            kind(&["--durable-node", "x", "--quick"]),
            ErrorKind::ArgumentConflict
        );
    }

    #[test]
    fn only_our_failed_checks_fail_the_run() {
        let table = |rows: &[(&str, &str)]| Table {
            title: "t".into(),
            intro: String::new(),
            header: vec!["implementation".into(), "check".into()],
            rows: rows
                .iter()
                .map(|(name, check)| vec![name.to_string(), check.to_string()])
                .collect(),
            notes: Vec::new(),
        };
        let peers_fail = table(&[
            ("wheel::Wheel (ours)", "ok"),
            (
                "hierarchical_hash_wheel_timer thread",
                "FAILED: 3 fired early",
            ),
            ("one-second Redis wheel, 3 nodes", "FAILED: 9 fired early"),
            ("floor (slab write+free)", "n/a"),
        ]);
        assert_eq!(ours_passed(std::slice::from_ref(&peers_fail)), Ok(()));
        for ours in [
            "wheel::Wheel (ours), after a long churn",
            "wheel::DelayQueue, shared (ours)",
            "ours, Redis, 3 nodes",
        ] {
            let failing = table(&[(ours, "FAILED: 1 lost")]);
            let err = ours_passed(&[peers_fail.clone(), failing]).unwrap_err();
            assert!(err.contains(ours), "{err}");
            assert!(!err.contains("hierarchical"), "{err}");
        }
        // A run of ours that failed before its figures: the label in the
        // second cell, the rest of the row empty.
        let mut cut_short = table(&[("ours, embedded, 1 node", "FAILED: store error")]);
        cut_short.rows[0].push(String::new());
        let err = ours_passed(&[cut_short]).unwrap_err();
        assert!(err.contains("ours, embedded, 1 node"), "{err}");
    }

    #[test]
    fn durable_is_a_section() {
        let args = parse(&["--only", "durable", "--quick"]).unwrap();
        let sec = settings(&args).sections;
        assert!(sec.durable && !sec.single && !sec.memory && !sec.threaded);
        assert!(parse(&["--durable-node", "ours,1,1,1,ns,url"]).is_ok());
    }

    #[test]
    fn flows_is_a_section_and_runs_by_default() {
        let args = parse(&["--only", "flows", "--quick"]).unwrap();
        let s = settings(&args);
        assert!(s.sections.flows && !s.sections.durable && !s.sections.http);
        assert!(s.flows.quick);
        assert!(settings(&parse(&["--quick"]).unwrap()).sections.flows);
        assert!(!settings(&parse(&[]).unwrap()).flows.quick);
    }

    #[test]
    fn http_is_a_section_and_runs_by_default() {
        let args = parse(&["--only", "http", "--quick"]).unwrap();
        let sec = settings(&args).sections;
        assert!(sec.http && !sec.durable && !sec.single);
        assert!(settings(&parse(&["--quick"]).unwrap()).sections.http);
        assert!(settings(&parse(&[]).unwrap()).sections.http);
    }

    #[test]
    fn schedules_is_a_section_and_runs_by_default() {
        let args = parse(&["--only", "schedules", "--quick"]).unwrap();
        let s = settings(&args);
        assert!(s.sections.schedules && !s.sections.durable && !s.sections.server);
        assert!(s.schedules.quick);
        assert!(settings(&parse(&["--quick"]).unwrap()).sections.schedules);
        assert!(!settings(&parse(&[]).unwrap()).schedules.quick);
    }

    #[test]
    fn server_is_a_section_and_runs_by_default() {
        let args = parse(&["--only", "server", "--quick"]).unwrap();
        let s = settings(&args);
        assert!(s.sections.server && !s.sections.http && !s.sections.durable);
        assert!(s.server.quick);
        assert!(settings(&parse(&["--quick"]).unwrap()).sections.server);
        assert!(!settings(&parse(&[]).unwrap()).server.quick);
    }
}
