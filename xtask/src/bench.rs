//! `cargo xtask bench`: every benchmark suite, each comparing against its
//! baseline in the same run, then short fuzz runs of the sstable reader and
//! of commit log replay.

use std::path::Path;
use std::time::Instant;

use crate::package::PREFIX;
use crate::report::{self, Outcome, StepResult};
use crate::runner;

/// One benchmark suite: `cargo bench -p replmem-<dir> --bench <bench> -- <args>`.
#[derive(Debug)]
struct Suite {
    /// The crate's folder (its package is `replmem-<dir>`).
    dir: &'static str,
    bench: &'static str,
    /// Arguments for a full run.
    full: &'static [&'static str],
    /// Arguments for `--quick` (smallest scale).
    quick: &'static [&'static str],
}

const SUITES: &[Suite] = &[
    Suite {
        dir: "logalloc",
        bench: "fragmentation",
        full: &["--scale", "0.0625", "--repeat", "3"],
        quick: &["--scale", "0.015625"],
    },
    Suite {
        dir: "logalloc",
        bench: "steady_state",
        full: &["--repeat", "3"],
        quick: &["--repeat", "1"],
    },
    Suite {
        dir: "logalloc",
        bench: "get",
        full: &[],
        quick: &["--quick"],
    },
    Suite {
        dir: "region-group",
        bench: "admission",
        full: &[],
        quick: &["--quick"],
    },
    Suite {
        dir: "mutation",
        bench: "merging_reader",
        full: &[],
        quick: &["--quick"],
    },
    Suite {
        dir: "memtable",
        bench: "memtable",
        full: &[],
        quick: &["--quick"],
    },
    Suite {
        dir: "row-cache",
        bench: "row_cache",
        full: &[],
        quick: &["--quick"],
    },
    Suite {
        dir: "replica",
        bench: "cache",
        full: &[],
        quick: &["--quick"],
    },
    Suite {
        dir: "sstable",
        bench: "sstable_io",
        full: &["--scale", "1", "--runs", "3"],
        quick: &[],
    },
    Suite {
        dir: "dirty-memory",
        bench: "flush_policy",
        full: &[],
        quick: &["--scale", "0.1"],
    },
    Suite {
        dir: "flush-scheduler",
        bench: "submit",
        full: &[],
        quick: &["--quick"],
    },
    Suite {
        dir: "commitlog",
        bench: "append",
        full: &[],
        quick: &["--quick"],
    },
    Suite {
        dir: "compaction",
        bench: "strategies",
        full: &[],
        quick: &["--quick"],
    },
    // The replica beside fjall (issue 35): every case three times (well
    // over an hour); --quick is its smoke size.
    Suite {
        dir: "replica-stress",
        bench: "peer",
        full: &["--runs", "3"],
        quick: &["--test"],
    },
    // One hit, one miss and the write shape on each engine, by counting
    // (no timing).
    Suite {
        dir: "replica-stress",
        bench: "profile",
        full: &[],
        quick: &["--quick"],
    },
];

/// The cargo-fuzz targets (project directory, target) and how long each
/// runs.
const FUZZ_TARGETS: &[(&str, &str)] = &[("sstable/fuzz", "reader"), ("commitlog/fuzz", "replay")];
const FUZZ_SECONDS: &str = "30";

/// Runs the bench task: every suite, or only the named packages' suites
/// (`fuzz` names the fuzz runs).
pub(crate) fn run(args: &[&str]) -> Result<(), String> {
    let mut quick = false;
    let mut only: Vec<&str> = Vec::new();
    for arg in args {
        match *arg {
            "--quick" => quick = true,
            name if name == "fuzz" => only.push(name),
            // A crate's folder name, or its package name.
            name if SUITES
                .iter()
                .any(|s| s.dir == name || s.dir == name.trim_start_matches(PREFIX)) =>
            {
                only.push(name.trim_start_matches(PREFIX));
            }
            other => {
                return Err(format!(
                    "`cargo xtask bench` takes --quick and crate names ({}, fuzz), not `{other}`",
                    SUITES.iter().map(|s| s.dir).collect::<Vec<_>>().join(", ")
                ));
            }
        }
    }
    let selected = |name: &str| only.is_empty() || only.contains(&name);
    let mut results = Vec::new();
    for suite in SUITES.iter().filter(|s| selected(s.dir)) {
        let package = format!("{PREFIX}{}", suite.dir);
        let name = suite.bench;
        // A bench of one file, or a folder with its main.rs.
        let benches = Path::new(suite.dir).join("benches");
        let file = [
            benches.join(format!("{name}.rs")),
            benches.join(name).join("main.rs"),
        ]
        .into_iter()
        .find(|f| f.exists())
        .unwrap_or_else(|| benches.join(format!("{name}.rs")));
        let started = Instant::now();
        let outcome = if file.exists() {
            let mut cargo_args = vec!["bench", "-p", &package, "--bench", name, "--"];
            cargo_args.extend_from_slice(if quick { suite.quick } else { suite.full });
            runner::cargo(&cargo_args)
                .status()
                .map(|()| Outcome::Passed(format!("{package} ({})", file.display())))
        } else {
            Ok(Outcome::Skipped(format!(
                "not written yet: {} has no {}",
                package,
                file.display()
            )))
        };
        results.push(StepResult {
            name,
            took: started.elapsed(),
            outcome,
        });
    }
    if selected("fuzz") {
        let started = Instant::now();
        let outcome = fuzz();
        results.push(StepResult {
            name: "fuzz",
            took: started.elapsed(),
            outcome,
        });
    }
    report::print_table(&results);
    let failed: Vec<&str> = results
        .iter()
        .filter(|r| r.outcome.is_err())
        .map(|r| r.name)
        .collect();
    if failed.is_empty() {
        println!("\ncargo xtask bench: ok; results are recorded by hand in BENCHMARKS.md");
        Ok(())
    } else {
        Err(format!("failed suites: {}", failed.join(", ")))
    }
}

/// Brief cargo-fuzz runs of every fuzz target; skipped, saying why, where
/// the nightly toolchain or cargo-fuzz is missing.
fn fuzz() -> Result<Outcome, String> {
    if !runner::has_cargo_subcommand(Some("nightly"), "fuzz") {
        return Ok(Outcome::Skipped(
            "needs the nightly toolchain and cargo-fuzz (cargo install cargo-fuzz)".to_string(),
        ));
    }
    let max_time = format!("-max_total_time={FUZZ_SECONDS}");
    let mut done = Vec::new();
    for &(dir, target) in FUZZ_TARGETS {
        if !Path::new(dir).join("Cargo.toml").exists() {
            done.push(format!("{target}: skipped, {dir} does not exist yet"));
            continue;
        }
        runner::program(
            "cargo",
            &[
                "+nightly",
                "fuzz",
                "run",
                "--fuzz-dir",
                dir,
                target,
                "--",
                &max_time,
            ],
        )
        .status()
        .map_err(|e| format!("{dir} {target}: {e}"))?;
        done.push(format!("{target} ran {FUZZ_SECONDS}s without a crash"));
    }
    Ok(Outcome::Passed(done.join("; ")))
}
