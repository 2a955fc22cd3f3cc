//! `replica-stress` refuses bad usage with exit status 2 and one message
//! naming the option, fails a run with exit status 1 and the whole chain of
//! causes (the operating system's error included), checks its output files
//! before the load starts, and answers `--version`.

use std::path::Path;
use std::process::Command;

/// A small, quick run: options that would succeed.
const QUICK: &[&str] = &[
    "--threads=1",
    "--ops=20",
    "--partitions=20",
    "--partition-size=1KiB",
    "--budget=16MiB",
    "--commitlog=off",
    "--prefault=off",
];

/// Runs the program in `tmp` (its temporary directory too); returns the
/// exit code, standard output and standard error.
fn run(tmp: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_replica-stress"))
        .args(args)
        .env("TMPDIR", tmp)
        .current_dir(tmp)
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn bad_values_exit_2_with_one_message_naming_the_option() {
    let tmp = tempfile::tempdir().unwrap();
    for (args, message) in [
        (
            &["--threads", "-3"][..],
            "invalid --threads \"-3\": expected a whole number, 1 to 10000 threads",
        ),
        (&["--threads=many"][..], "invalid --threads \"many\""),
        (&["--tables=-1"][..], "invalid --tables \"-1\""),
        (
            &["--budget=12x"][..],
            "invalid --budget \"12x\": expected a byte size",
        ),
        // Range checks after parsing: the same status.
        (
            &["--threads=0"][..],
            "invalid --threads \"0\": expected 1 to 10000 threads",
        ),
        (&["--budget=1KiB"][..], "invalid --budget \"1024\""),
    ] {
        let (code, out, err) = run(tmp.path(), &[QUICK, args].concat());
        assert_eq!(code, Some(2), "{args:?}: {out}\n{err}");
        assert!(err.contains(message), "{args:?}: {err}");
        let option = message.split_whitespace().nth(1).unwrap();
        assert_eq!(
            err.matches(option).count(),
            1,
            "{args:?}: printed once: {err}"
        );
        assert!(!out.contains("Running"), "nothing ran: {out}");
    }
    // clap's own refusals keep its status too.
    let (code, _, err) = run(tmp.path(), &["--no-such-option"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--no-such-option"), "{err}");
}

#[test]
fn version_and_help_exit_0() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, out, err) = run(tmp.path(), &["--version"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        out.trim(),
        format!("replica-stress {}", env!("CARGO_PKG_VERSION"))
    );
    let (code, out, _) = run(tmp.path(), &["--help"]);
    assert_eq!(code, Some(0));
    assert!(out.contains("--version"), "{out}");
}

#[test]
fn a_data_dir_whose_parent_is_missing_is_refused_and_nothing_created() {
    let tmp = tempfile::tempdir().unwrap();
    let deep = tmp.path().join("no").join("such").join("dd");
    let arg = format!("--data-dir={}", deep.display());
    let (code, out, err) = run(tmp.path(), &[QUICK, &[&arg]].concat());
    assert_eq!(code, Some(2), "{out}\n{err}");
    assert!(
        err.contains("invalid --data-dir") && err.contains("no/such does not exist"),
        "{err}"
    );
    assert!(!tmp.path().join("no").exists(), "no parent was created");
    // A new directory in an existing one is fine.
    let fresh = tmp.path().join("fresh");
    let arg = format!("--data-dir={}", fresh.display());
    let (code, out, err) = run(tmp.path(), &[QUICK, &[&arg]].concat());
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(fresh.is_dir());
}

#[test]
fn io_failures_exit_1_with_the_operating_systems_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("afile");
    std::fs::write(&file, b"x").unwrap();
    let arg = format!("--data-dir={}", file.join("d").display());
    let (code, out, err) = run(tmp.path(), &[QUICK, &[&arg]].concat());
    assert_eq!(code, Some(1), "{out}\n{err}");
    assert!(
        err.contains("cannot create directory") && err.contains("Not a directory (os error 20)"),
        "{err}"
    );
}

#[test]
fn output_files_are_checked_before_the_load_starts() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing");
    for option in ["--json", "--hdr-log"] {
        let arg = format!("{option}={}", missing.join("out").display());
        let (code, out, err) = run(tmp.path(), &[QUICK, &[&arg]].concat());
        assert_eq!(code, Some(1), "{option}: {out}\n{err}");
        assert!(
            err.contains("cannot open for writing")
                && err.contains("missing/out: No such file or directory"),
            "{option}: {err}"
        );
        assert!(!out.contains("Running"), "{option}: nothing ran: {out}");
    }
    // A results directory whose per-run files cannot be written.
    let results = tmp.path().join("results");
    std::fs::create_dir_all(results.join("soft-limit.ops.csv")).unwrap();
    let arg = format!("--results-dir={}", results.display());
    let (code, out, err) = run(tmp.path(), &[QUICK, &[&arg]].concat());
    assert_eq!(code, Some(1), "{out}\n{err}");
    assert!(err.contains("soft-limit.ops.csv: Is a directory"), "{err}");
    assert!(!out.contains("Running"), "nothing ran: {out}");
    // Checking leaves no file behind.
    let json = tmp.path().join("s.json");
    let hdr = missing.join("never.hlog");
    let (code, _, err) = run(
        tmp.path(),
        &[
            QUICK,
            &[
                &format!("--json={}", json.display()),
                &format!("--hdr-log={}", hdr.display()),
            ],
        ]
        .concat(),
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(!json.exists(), "the check removed the file it created");
}

/// The memory the database compares its pool with: the machine's, or the
/// cgroup's limit if lower (as `replica`'s `DatabaseConfig::validate` reads
/// it), in bytes.
fn memory_limit() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").expect("Linux has /proc/meminfo");
    let line = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .expect("MemTotal");
    let total = line
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u64>()
        .unwrap()
        * 1024;
    [
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ]
    .into_iter()
    .find_map(|p| std::fs::read_to_string(p).ok()?.trim().parse::<u64>().ok())
    .map_or(total, |cgroup| cgroup.min(total))
}

/// A budget whose memory pool (the budget, the cache's share and
/// headroom, more than twice the budget) exceeds the machine: refused
/// with exit 2 before anything runs or any memory is taken, naming
/// `--budget`, the machine's figure, the pool's and its parts.
#[test]
fn a_budget_larger_than_the_machine_is_refused_before_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let limit = memory_limit();
    // A whole number of MiB above the limit: the pool is larger still.
    let budget = format!("--budget={}MiB", (limit >> 20) + 1);
    let args: Vec<&str> = QUICK
        .iter()
        .copied()
        .filter(|a| !a.starts_with("--budget"))
        .chain([budget.as_str()])
        .collect();
    let (code, out, err) = run(tmp.path(), &args);
    assert_eq!(code, Some(2), "{out}\n{err}");
    for part in [
        "invalid --budget",
        "expected a memory pool within the",
        &format!("{} MiB of", limit >> 20),
        "= dirty budget",
        "+ row cache share",
        "lower the budget or the cache size",
    ] {
        assert!(err.contains(part), "{part:?} missing from: {err}");
    }
    assert!(!out.contains("Running"), "nothing ran: {out}");
    // A budget well within the machine still runs.
    let (code, out, err) = run(tmp.path(), QUICK);
    assert_eq!(code, Some(0), "{out}\n{err}");
}
