//! `cargo run --release -p wheel-bench -- [--quick] [--out PATH.md] [--no-write]
//! [--only single,memory,threaded,dq] [--layouts]`
//!
//! Runs our timers and their peers on the same seeded workloads, prints a table
//! per workload and writes them (with the machine's facts) into
//! `docs/benchmarks.md`, plus a chart `docs/benchmarks.svg`. See
//! `docs/benchmarks.md` for what each workload does.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use wheel_bench::report::{self, Meta};
use wheel_bench::suite::{self, Progress, Results, Sections, Settings};

const USAGE: &str = "\
usage: wheel-bench [--quick] [--out PATH.md] [--no-write] [--only LIST] [--layouts]
                   [--sizes LIST] [--runs N]

  --quick        small sizes (well under a minute on 2 cores); the default is the
                 full run (N up to 10M; tens of minutes)
  --out PATH.md  write the results into PATH.md (between generated-section
                 markers, keeping the rest of the file) and the chart next to
                 it as PATH.svg; default: docs/benchmarks.md of this workspace
  --no-write     print only
  --only LIST    comma-separated subset of: single, memory, threaded, dq
  --layouts      compare candidate wheel layouts instead (N=1M; 100K with
                 --quick); written into its own section of the same file
  --sizes LIST   comma-separated timer counts for the single-threaded
                 workloads (e.g. 1000000,10000000), overriding the mode's
  --runs N       runs per single-threaded and DelayQueue measurement
";

struct Args {
    quick: bool,
    sizes: Option<Vec<usize>>,
    runs: Option<usize>,
    out: Option<PathBuf>,
    write: bool,
    only: Option<Sections>,
    layouts: bool,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut a = Args {
        quick: false,
        sizes: None,
        runs: None,
        out: None,
        write: true,
        only: None,
        layouts: false,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--quick" => a.quick = true,
            "--no-write" => a.write = false,
            "--layouts" => a.layouts = true,
            "--sizes" => {
                let list = it.next().ok_or("--sizes needs a list")?;
                let sizes = list
                    .split(',')
                    .map(|n| n.trim().replace('_', "").parse::<usize>())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| format!("--sizes {list:?}: {e}"))?;
                if sizes.is_empty() || sizes.contains(&0) {
                    return Err("--sizes needs positive counts".into());
                }
                a.sizes = Some(sizes);
            }
            "--runs" => {
                let n = it.next().ok_or("--runs needs a number")?;
                let n: usize = n.parse().map_err(|e| format!("--runs {n:?}: {e}"))?;
                if n == 0 {
                    return Err("--runs needs at least 1".into());
                }
                a.runs = Some(n);
            }
            "--out" => a.out = Some(PathBuf::from(it.next().ok_or("--out needs a path")?)),
            "--only" => {
                let mut s = Sections {
                    single: false,
                    memory: false,
                    threaded: false,
                    delay_queue: false,
                };
                for part in it.next().ok_or("--only needs a list")?.split(',') {
                    match part.trim() {
                        "single" => s.single = true,
                        "memory" => s.memory = true,
                        "threaded" => s.threaded = true,
                        "dq" => s.delay_queue = true,
                        other => return Err(format!("unknown section {other:?}")),
                    }
                }
                a.only = Some(s);
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(a)
}

fn default_out() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new("."))
        .join("docs")
        .join("benchmarks.md")
}

fn main() -> ExitCode {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse(&raw) {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("error: {e}\n");
            }
            eprint!("{USAGE}");
            return if e.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(2)
            };
        }
    };
    let command = format!("cargo run --release -p wheel-bench -- {}", raw.join(" "))
        .trim_end()
        .to_string();
    let mut meta = Meta::collect(command);
    let progress = Progress::new();
    let out = args.out.clone().unwrap_or_else(default_out);

    if args.layouts {
        let (n, runs, steps) = if args.quick {
            (100_000, 3, 200_000)
        } else {
            (1_000_000, 5, 1_000_000)
        };
        let table = suite::run_layouts(n, runs, steps, &progress);
        meta.elapsed_s = progress_secs(&progress);
        println!("{}", table.to_text());
        if args.write {
            let section = format!(
                "## Layouts\n\n{}\n{}",
                meta.to_markdown(),
                table.to_markdown()
            );
            if let Err(e) = report::write_markdown(&out, "layouts", &section) {
                eprintln!("error: writing {}: {e}", out.display());
                return ExitCode::FAILURE;
            }
            eprintln!("wrote {}", out.display());
        }
        return ExitCode::SUCCESS;
    }

    let mut settings = if args.quick {
        Settings::quick()
    } else {
        Settings::full()
    };
    if let Some(only) = args.only {
        settings.sections = only;
    }
    if let Some(sizes) = args.sizes.clone() {
        settings.sizes = sizes;
    }
    if let Some(runs) = args.runs {
        settings.runs = runs;
        settings.runs_large = runs;
        settings.dq_runs = runs;
    }
    let mut results = Results::default();
    let sec = settings.sections;
    if sec.memory || sec.single {
        // Memory first: its bytes-per-timer figures decide which large runs fit.
        suite::run_memory(&settings, &progress, &mut results);
    }
    if sec.single {
        suite::run_single(&settings, &progress, &mut results);
    }
    if sec.threaded {
        suite::run_threaded(&settings, &progress, &mut results);
    }
    if sec.delay_queue {
        suite::run_delay_queue(&settings, &progress, &mut results);
    }
    meta.elapsed_s = progress_secs(&progress);

    println!("{}", meta.to_markdown());
    for t in &results.tables {
        println!("{}", t.to_text());
    }
    let failed = results.tables.iter().any(|t| {
        t.rows
            .iter()
            .any(|r| r.last().is_some_and(|c| c.starts_with("FAILED")))
    });
    if failed {
        eprintln!(
            "warning: some implementation failed its own output check (see the check column)"
        );
    }
    if args.write {
        if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
            if let Err(e) = std::fs::create_dir_all(dir) {
                eprintln!("error: creating {}: {e}", dir.display());
                return ExitCode::FAILURE;
            }
        }
        let svg = out.with_extension("svg");
        let chart_name = if results.panels.is_empty() {
            None
        } else {
            if let Err(e) = wheel_bench::chart::draw(&svg, &results.panels) {
                eprintln!("error: drawing {}: {e}", svg.display());
                return ExitCode::FAILURE;
            }
            eprintln!("wrote {}", svg.display());
            svg.file_name().map(|f| f.to_string_lossy().into_owned())
        };
        let note = if settings.quick {
            "Quick run (`--quick`): small sizes, few runs, noisy. The full sizes come from the \
             same command without `--quick`."
        } else {
            ""
        };
        let section = report::results_markdown(&meta, note, &results.tables, chart_name.as_deref());
        if let Err(e) = report::write_markdown(&out, "results", &section) {
            eprintln!("error: writing {}: {e}", out.display());
            return ExitCode::FAILURE;
        }
        eprintln!("wrote {}", out.display());
    }
    ExitCode::SUCCESS
}

fn progress_secs(p: &Progress) -> f64 {
    p.elapsed().as_secs_f64()
}
