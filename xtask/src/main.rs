//! Workspace tasks, run as `cargo xtask <task>` (the alias lives in
//! `.cargo/config.toml`).
//!
//! * `cargo xtask test [--quick]`: everything CI checks, in order: rustfmt,
//!   the dependency check (each library crate's normal dependencies are on
//!   its list in `deps.rs`), clippy with warnings denied, the test suite
//!   (cargo-nextest when it is installed, `cargo test` otherwise), doc
//!   tests, every example program (`examples`), each pickable crate's
//!   README snippet and example built and run from a project outside the
//!   workspace (`readmes`), the naming scheme and
//!   `cargo package` of every published package (`package`), `cargo doc`
//!   with warnings denied, `cargo check` with the
//!   declared rust-version's toolchain, the unsafe core of `logalloc` under
//!   valgrind, and the loom pass (every crate with loom models must run at
//!   least one). A step whose tool is missing (valgrind, the MSRV
//!   toolchain) is reported as skipped, not passed. `--quick` skips the
//!   examples, the READMEs' builds, the packaging check, the doc build, the MSRV check,
//!   valgrind and loom for the inner loop.
//! * `cargo xtask bench [--quick]`: runs every benchmark suite.
//! * `cargo xtask stress [ARGS...]`: runs the main program, `replica-stress`.
//! * `cargo xtask ab REV_A REV_B [--runs N] -- ARGS...`: builds the main
//!   program at two revisions, alternates their runs and prints every
//!   run's figures with the ratios (`ab.rs`).
//!
//! Called with no arguments it prints this task list.
#![forbid(unsafe_code)]

mod ab;
mod bench;
mod deps;
mod examples;
mod metadata;
mod package;
mod readmes;
mod report;
mod runner;
mod test;

use std::process::ExitCode;

const USAGE: &str = "\
cargo xtask <task> [options]

tasks:
  test [--quick]    what CI runs: fmt, deps (allowed dependencies of each
                    library crate), clippy -D warnings, tests, doc tests,
                    examples (every example program runs),
                    readmes (each pickable crate's README snippet and
                    example build and run outside the workspace),
                    package (names replmem-<folder>, cargo package),
                    cargo doc -D warnings, msrv (cargo +<rust-version> check),
                    valgrind (logalloc), loom models; a step whose tool is
                    missing is reported SKIPPED;
                    --quick skips examples, readmes, package, cargo doc, msrv,
                    valgrind and loom;
                    --step NAME runs only that step (repeatable)
  bench [--quick] [CRATE...]
                    run the benchmark suites (all, or the named crates';
                    `fuzz` is the sstable reader and commit log replay fuzz runs); --quick: small scale
  stress [ARGS...]  run the main program, replica-stress, with ARGS
  ab REV_A REV_B [--runs N] -- ARGS...
                    build replica-stress at both revisions (target/ab), run
                    them alternately N times each (default 3) with ARGS,
                    recording the load average and CPU time of each run,
                    and print every run's figures and the ratios B/A
  help              print this list
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(err) = runner::enter_workspace_root() {
        eprintln!("xtask: {err}");
        return ExitCode::FAILURE;
    }
    let Some((task, rest)) = args.split_first() else {
        print!("{USAGE}");
        return ExitCode::SUCCESS;
    };
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    let result = match task.as_str() {
        "test" => test::run(&rest),
        "bench" => bench::run(&rest),
        "stress" => stress(&rest),
        "ab" => ab::run(&rest),
        "help" | "-h" | "--help" => {
            print!("{USAGE}");
            Ok(())
        }
        other => Err(format!("unknown task `{other}`\n\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("xtask: {err}");
            ExitCode::FAILURE
        }
    }
}

/// Runs `replica-stress` (the `replica-stress` package's program) in
/// release mode with `args`.
fn stress(args: &[&str]) -> Result<(), String> {
    let mut cargo_args = vec![
        "run",
        "--release",
        "-p",
        "replmem-replica-stress",
        "--bin",
        "replica-stress",
        "--",
    ];
    cargo_args.extend_from_slice(args);
    runner::cargo(&cargo_args).status()
}
