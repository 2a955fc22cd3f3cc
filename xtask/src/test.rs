//! `cargo xtask test`: every check CI runs, in order.

use std::time::Instant;

use crate::report::{self, Counts, Outcome, StepResult};
use crate::{deps, examples, metadata, package, readmes, runner};

/// The logalloc tests that run under valgrind memcheck: the unit tests, a
/// smoke test of every unsafe path, the property model (few cases), the
/// segment-edge cases, a listener that panics mid-compaction, the
/// batch reader/writer and chunked strings, and a 1 TiB pool (sizes in
/// object headers).
const VALGRIND_PACKAGE: &str = "replmem-logalloc";
const VALGRIND_TARGETS: &[&str] = &[
    "--lib",
    "--test",
    "valgrind_smoke",
    "--test",
    "model_alloc_free_compact_merge",
    "--test",
    "unsafe_core_edges",
    "--test",
    "panicking_listener_leaves_objects_intact",
    "--test",
    "reader_writer_and_managed_bytes",
    "--test",
    "tebibyte_pool_is_lazy_and_keeps_handles",
];

/// What the steps counted, for the summary line.
#[derive(Debug, Default)]
struct Tally {
    tests: Counts,
    doc_tests: Counts,
    loom_models: Counts,
}

type Step = fn(&mut Tally) -> Result<Outcome, String>;

/// Every step, in the order the task runs them.
const STEP_NAMES: &[&str] = &[
    "fmt",
    "deps",
    "clippy",
    "tests",
    "doc-tests",
    "examples",
    "readmes",
    "package",
    "doc",
    "msrv",
    "valgrind",
    "loom",
];

/// Runs the test task. `--quick` skips the examples, the READMEs' builds
/// outside the workspace, the packaging check,
/// `cargo doc`, the MSRV check, valgrind and loom;
/// `--step NAME` (repeatable) runs only the named steps.
pub(crate) fn run(args: &[&str]) -> Result<(), String> {
    let mut quick = false;
    let mut only: Vec<&str> = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match *arg {
            "--quick" => quick = true,
            "--step" => match args.next() {
                Some(name) if STEP_NAMES.contains(name) => only.push(name),
                Some(name) => {
                    return Err(format!(
                        "unknown step `{name}`; steps are {}",
                        STEP_NAMES.join(", ")
                    ));
                }
                None => return Err("--step needs a step name".to_string()),
            },
            other => {
                return Err(format!(
                    "`cargo xtask test` takes --quick and --step NAME, not `{other}`"
                ));
            }
        }
    }
    let mut steps: Vec<(&'static str, Step)> = vec![
        ("fmt", fmt),
        ("deps", dependencies),
        ("clippy", clippy),
        ("tests", tests),
        ("doc-tests", doc_tests),
    ];
    if !quick || !only.is_empty() {
        steps.push(("examples", run_examples));
        steps.push(("readmes", readme_lines));
        steps.push(("package", packaging));
        steps.push(("doc", doc));
        steps.push(("msrv", msrv));
        steps.push(("valgrind", valgrind));
        steps.push(("loom", loom));
    }
    if !only.is_empty() {
        steps.retain(|(name, _)| only.contains(name));
    }

    let started = Instant::now();
    let mut tally = Tally::default();
    let mut results = Vec::new();
    for (name, step) in steps {
        println!("\n==> {name}");
        let step_started = Instant::now();
        let outcome = step(&mut tally);
        let took = step_started.elapsed();
        match &outcome {
            Ok(Outcome::Passed(note)) => {
                println!("==> {name}: ok in {:.1}s {note}", took.as_secs_f64());
            }
            Ok(Outcome::Skipped(reason)) => {
                println!("==> {name}: SKIPPED: {reason}");
            }
            Err(reason) => println!("==> {name}: FAILED in {:.1}s: {reason}", took.as_secs_f64()),
        }
        results.push(StepResult {
            name,
            took,
            outcome,
        });
    }
    report::print_table(&results);

    let failed_steps: Vec<&str> = results
        .iter()
        .filter(|r| r.outcome.is_err())
        .map(|r| r.name)
        .collect();
    let skipped: Vec<&str> = results
        .iter()
        .filter(|r| matches!(r.outcome, Ok(Outcome::Skipped(_))))
        .map(|r| r.name)
        .collect();
    let total = tally.tests.add(tally.doc_tests).add(tally.loom_models);
    println!(
        "\ncargo xtask test{}: {} in {:.0}s: {}/{} steps ok{}; {} tests, {} doc tests, {} loom models passed{}",
        if quick { " --quick" } else { "" },
        if failed_steps.is_empty() {
            "ok"
        } else {
            "FAILED"
        },
        started.elapsed().as_secs_f64(),
        results.len() - failed_steps.len() - skipped.len(),
        results.len(),
        if skipped.is_empty() {
            String::new()
        } else {
            format!(", skipped: {}", skipped.join(", "))
        },
        tally.tests.passed,
        tally.doc_tests.passed,
        tally.loom_models.passed,
        if quick {
            " (quick: examples, readmes, package, doc, msrv, valgrind and loom not run)"
        } else {
            ""
        },
    );
    println!("xtask: {} passed, {} failed", total.passed, total.failed);
    if failed_steps.is_empty() {
        Ok(())
    } else {
        Err(format!("failed steps: {}", failed_steps.join(", ")))
    }
}

fn fmt(_: &mut Tally) -> Result<Outcome, String> {
    runner::cargo(&["fmt", "--all", "--", "--check"])
        .status()
        .map(|()| Outcome::Passed(String::new()))
}

/// Every library crate's normal dependencies are on its list in
/// `deps::ALLOWED_DEPENDENCIES`.
fn dependencies(_: &mut Tally) -> Result<Outcome, String> {
    let packages = metadata::workspace()?;
    deps::check(&packages, deps::ALLOWED_DEPENDENCIES).map(Outcome::Passed)
}

fn clippy(_: &mut Tally) -> Result<Outcome, String> {
    runner::cargo(&[
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ])
    .status()
    .map(|()| Outcome::Passed(String::new()))
}

/// Turns a runner's counts into a step result: failures and ignored tests
/// fail the step (an ignored test checks nothing), and so does running none.
fn judge(counts: Counts, what: &str) -> Result<Outcome, String> {
    if counts.failed > 0 {
        Err(format!("{} {what} failed", counts.failed))
    } else if counts.ignored > 0 {
        Err(format!(
            "{} {what} ignored or skipped: every test must run",
            counts.ignored
        ))
    } else if counts.passed == 0 {
        Err(format!("no {what} ran"))
    } else {
        Ok(Outcome::Passed(format!(
            "({} {what} passed)",
            counts.passed
        )))
    }
}

fn tests(tally: &mut Tally) -> Result<Outcome, String> {
    if runner::has_cargo_subcommand(None, "nextest") {
        let output = runner::cargo(&["nextest", "run", "--workspace", "--profile", "ci"])
            .tee()
            .map_err(|(reason, output)| match report::parse_nextest(&output) {
                Some(c) => format!("{reason}; {} passed, {} failed", c.passed, c.failed),
                None => reason,
            })?;
        let counts = report::parse_nextest(&output)
            .ok_or("nextest printed no summary line; cannot tell what ran")?;
        tally.tests = counts;
        judge(counts, "tests")
    } else {
        println!("cargo-nextest is not installed: falling back to `cargo test`");
        let output = runner::cargo(&["test", "--workspace", "--lib", "--bins", "--tests"])
            .tee()
            .map_err(|(reason, _)| reason)?;
        let counts = report::parse_cargo_test(&output);
        tally.tests = counts;
        judge(counts, "tests")
    }
}

fn doc_tests(tally: &mut Tally) -> Result<Outcome, String> {
    let output = runner::cargo(&["test", "--workspace", "--doc"])
        .tee()
        .map_err(|(reason, _)| reason)?;
    let counts = report::parse_cargo_test(&output);
    tally.doc_tests = counts;
    judge(counts, "doc tests")
}

/// Every example program runs and succeeds; the crates a user is most
/// likely to pick alone each have one.
fn run_examples(_: &mut Tally) -> Result<Outcome, String> {
    let packages = metadata::workspace()?;
    examples::run(&packages, examples::MUST_HAVE_EXAMPLES).map(Outcome::Passed)
}

/// Each pickable crate's README snippet and example build and run in a
/// project outside the workspace (see `readmes.rs`).
fn readme_lines(_: &mut Tally) -> Result<Outcome, String> {
    readmes::run().map(Outcome::Passed)
}

/// Every package but xtask is named `replmem-<folder>` and packages for
/// crates.io with a complete manifest (see `package.rs`).
fn packaging(_: &mut Tally) -> Result<Outcome, String> {
    let packages = metadata::workspace()?;
    package::run(&packages).map(Outcome::Passed)
}

fn doc(_: &mut Tally) -> Result<Outcome, String> {
    runner::cargo(&["doc", "--workspace", "--no-deps"])
        .env("RUSTDOCFLAGS", "-D warnings")
        .status()
        .map(|()| Outcome::Passed(String::new()))
}

/// The package whose tests and benches the msrv step leaves out: its
/// dev-dependency fjall 3 (the peer bench) needs Rust 1.90.
const MSRV_LIBRARY_ONLY: &str = "replmem-replica-stress";

/// The declared `rust-version` is true: the workspace builds with that
/// toolchain (`.ci/run` installs it with rustup). Skipped, saying so, when
/// the toolchain is not installed.
fn msrv(_: &mut Tally) -> Result<Outcome, String> {
    let packages = metadata::workspace()?;
    let mut versions: Vec<&str> = packages
        .iter()
        .filter_map(|p| p.rust_version.as_deref())
        .collect();
    versions.sort_unstable();
    versions.dedup();
    let msrv = match versions.as_slice() {
        [] => return Err("no member declares a rust-version".to_string()),
        [one] => *one,
        several => {
            return Err(format!(
                "members declare different rust-versions ({}): keep one in [workspace.package]",
                several.join(", ")
            ));
        }
    };
    if !runner::has_toolchain(msrv) {
        return Ok(Outcome::Skipped(format!(
            "the rust-version toolchain {msrv} is not installed (rustup toolchain install {msrv} --profile minimal)"
        )));
    }
    // Its own target directory: another compiler would rebuild the normal
    // one from scratch. replica-stress's dev-dependencies include fjall 3
    // (its peer bench, issue 35), which needs a newer Rust than ours: its
    // library and program are checked, its tests and benches are not.
    runner::cargo_with_toolchain(
        msrv,
        &[
            "check",
            "--workspace",
            "--all-targets",
            "--exclude",
            MSRV_LIBRARY_ONLY,
        ],
    )
    .env("CARGO_TARGET_DIR", "target/msrv")
    .status()?;
    runner::cargo_with_toolchain(msrv, &["check", "-p", MSRV_LIBRARY_ONLY, "--lib", "--bins"])
        .env("CARGO_TARGET_DIR", "target/msrv")
        .status()
        .map(|()| {
            Outcome::Passed(format!(
                "(the workspace builds with Rust {msrv}; {MSRV_LIBRARY_ONLY}'s library and program only)"
            ))
        })
}

/// Runs logalloc's unsafe core and writeback's system call under valgrind
/// memcheck, or says why not.
/// Cargo's target runner puts every test binary under valgrind, so the
/// binaries are the ones the test step already built.
fn valgrind(_: &mut Tally) -> Result<Outcome, String> {
    if !runner::has_program("valgrind", &["--version"]) {
        return Ok(Outcome::Skipped(
            "valgrind is not installed (apt-get install valgrind)".to_string(),
        ));
    }
    let runner_var = format!(
        "CARGO_TARGET_{}_RUNNER",
        runner::host_triple()?
            .to_uppercase()
            .replace(['-', '.'], "_")
    );
    // logalloc's unsafe core, then writeback's system call.
    let runs: [(&str, &[&str]); 2] = [
        (VALGRIND_PACKAGE, VALGRIND_TARGETS),
        ("replmem-writeback", &["--lib"]),
    ];
    let mut counts = Counts::default();
    for (package, targets) in runs {
        let mut args = vec!["test", "-p", package];
        args.extend_from_slice(targets);
        args.extend_from_slice(&["--", "--test-threads=2"]);
        let output = runner::cargo(&args)
            .env(
                &runner_var,
                "valgrind --error-exitcode=1 --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite --quiet",
            )
            .env("PROPTEST_CASES", "8")
            .tee()
            .map_err(|(reason, _)| {
                format!("valgrind reported errors or a test of {package} failed: {reason}")
            })?;
        counts = counts.add(report::parse_cargo_test(&output));
    }
    judge(counts, "tests under valgrind")
}

/// The loom pass: every crate with loom models, `--cfg loom`, release, its
/// own target directory, filtered to the `loom_` tests. Each crate with
/// loom models must run at least one.
fn loom(tally: &mut Tally) -> Result<Outcome, String> {
    let packages: Vec<String> = metadata::workspace()?
        .into_iter()
        .filter(metadata::Package::has_loom_models)
        .map(|p| p.name)
        .collect();
    if packages.is_empty() {
        return Err("no workspace crate enables loom under cfg(loom)".to_string());
    }
    let preemptions = std::env::var("LOOM_MAX_PREEMPTIONS").unwrap_or_else(|_| "2".to_string());
    let rustflags = match std::env::var("RUSTFLAGS") {
        Ok(flags) if !flags.trim().is_empty() => format!("{flags} --cfg loom"),
        _ => "--cfg loom".to_string(),
    };
    // One cargo run per crate, so that one crate's failure does not hide
    // another's models; all of them share the loom target directory.
    let mut counts = Counts::default();
    let mut failures = Vec::new();
    for package in &packages {
        // Every model lives in its crate's library, next to the code it
        // checks (`#[cfg(loom)]` modules, STYLE.md), so only the library's
        // test binary is built under loom: building each integration test
        // too cost minutes and ran no model.
        let args = ["test", "--release", "--lib", "-p", package, "--", "loom_"];
        match runner::cargo(&args)
            .env("RUSTFLAGS", &rustflags)
            .env("CARGO_TARGET_DIR", "target/loom")
            .env("LOOM_MAX_PREEMPTIONS", &preemptions)
            .tee()
        {
            Ok(output) => {
                let c = report::parse_cargo_test(&output);
                counts = counts.add(c);
                if c.passed == 0 {
                    failures.push(format!(
                        "{package}: no loom model ran (a crate that depends on loom under cfg(loom) has `loom_` tests)"
                    ));
                }
            }
            Err((reason, output)) => {
                let c = report::parse_cargo_test(&output);
                counts = counts.add(c);
                failures.push(format!(
                    "{package}: {reason} ({} models passed, {} failed)",
                    c.passed, c.failed
                ));
            }
        }
    }
    tally.loom_models = counts;
    if !failures.is_empty() {
        return Err(failures.join("; "));
    }
    judge(counts, "loom models").map(|outcome| match outcome {
        Outcome::Passed(note) => Outcome::Passed(format!(
            "{note} in {} (LOOM_MAX_PREEMPTIONS={preemptions})",
            packages.join(", ")
        )),
        skipped => skipped,
    })
}
