//! `replica-stress` stopped by SIGINT or SIGTERM: the load stops, the
//! summary of what ran is printed (marked as stopped early), the database
//! closes, the temporary data directory is removed, and the exit status is
//! 130. A second signal exits at once, still removing the directory.
#![cfg(unix)]

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// Starts the program with its temporary directories under `tmp`.
fn start(tmp: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_replica-stress"))
        .args(args)
        .env("TMPDIR", tmp)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn signal(child: &Child, name: &str) {
    let status = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success(), "kill -{name} failed");
}

/// Reads the child's standard output line by line until `until` accepts
/// one; returns what was read, that line included.
fn read_until(out: &mut impl BufRead, until: impl Fn(&str) -> bool) -> String {
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        let n = out.read_line(&mut line).unwrap();
        assert!(n > 0, "the program ended before the expected line:\n{seen}");
        seen.push_str(&line);
        if until(&line) {
            return seen;
        }
    }
}

/// A progress row: the interval's end time first (`    1.0s ...`).
fn is_progress_row(line: &str) -> bool {
    line.split_whitespace()
        .next()
        .and_then(|t| t.strip_suffix('s'))
        .is_some_and(|t| t.parse::<f64>().is_ok())
}

/// Waits for the child; returns its exit code, the rest of its standard
/// output, and its standard error.
fn finish(mut child: Child, mut out: impl Read) -> (Option<i32>, String, String) {
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    (status.code(), rest, err)
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// A write load far longer than the test waits for.
const LONG_WRITE: &[&str] = &[
    "--threads=2",
    "--duration=5m",
    "--partitions=100000",
    "--partition-size=4KiB",
    "--budget=32MiB",
    "--prefault=off",
];

#[test]
fn sigint_during_the_run_prints_what_ran_and_removes_the_temporary_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = start(tmp.path(), LONG_WRITE);
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let before = read_until(&mut out, is_progress_row);
    assert!(before.starts_with("Running write"), "{before}");
    assert_eq!(
        entries(tmp.path()).len(),
        1,
        "the run's temporary directory is there while it runs"
    );
    signal(&child, "INT");
    let (code, rest, err) = finish(child, out);
    assert_eq!(code, Some(130), "{rest}\n{err}");
    assert!(rest.contains("Results (soft-limit):"), "{rest}\n{err}");
    assert!(
        rest.contains("Stopped early             : interrupted (SIGINT or SIGTERM)"),
        "{rest}"
    );
    assert!(err.contains("SIGINT: stopping the load"), "{err}");
    assert!(err.contains("temporary data removed"), "{err}");
    assert!(entries(tmp.path()).is_empty(), "{:?}", entries(tmp.path()));
}

#[test]
fn a_second_signal_exits_at_once_and_still_removes_the_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = start(tmp.path(), LONG_WRITE);
    let mut out = BufReader::new(child.stdout.take().unwrap());
    read_until(&mut out, is_progress_row);
    signal(&child, "TERM");
    // The first signal's notice on standard error, then the second.
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let notice = read_until(&mut err, |l| l.contains("stopping the load"));
    assert!(notice.contains("SIGTERM"), "{notice}");
    signal(&child, "INT");
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let mut tail = String::new();
    err.read_to_string(&mut tail).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{rest}\n{tail}");
    // Either the second signal cut the close short, or the run had
    // already finished cleaning up when it came: no directory is left.
    assert!(
        tail.contains("SIGINT again: temporary directory removed")
            || tail.contains("temporary data removed"),
        "{tail}"
    );
    assert!(entries(tmp.path()).is_empty(), "{:?}", entries(tmp.path()));
}

#[test]
fn sigint_during_the_populate_phase_measures_nothing_and_cleans_up() {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = start(
        tmp.path(),
        &[
            "read",
            "--threads=2",
            "--duration=1s",
            "--partitions=1000000",
            "--partition-size=4KiB",
            "--budget=32MiB",
            "--prefault=off",
            "--commitlog=off",
        ],
    );
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let before = read_until(&mut out, |l| l.starts_with("Populating"));
    assert!(before.contains("1000000 partitions"), "{before}");
    signal(&child, "INT");
    let (code, rest, err) = finish(child, out);
    assert_eq!(code, Some(130), "{rest}\n{err}");
    assert!(!rest.contains("Results"), "nothing was measured:\n{rest}");
    assert!(
        err.contains("interrupted during the populate phase: nothing was measured"),
        "{err}"
    );
    assert!(entries(tmp.path()).is_empty(), "{:?}", entries(tmp.path()));
}
