//! The `sstable` binary: dump prints one JSON line per fragment, stats
//! prints the statistics, verify names the file, component and offset of a
//! corruption; each kind of failure has its own exit status.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use mutation::{Cell, DecoratedKey, Mutation, Timestamp, from_mutations};
use sstable::{Component, Writer, WriterOptions, component_path};

fn tool() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sstable"))
}

/// Writes `partitions` partitions (keys `p0`, `p1`, ...), each with one
/// row holding a `value_len`-byte cell, and returns the Data file's path.
fn write_table(dir: &Path, partitions: u32, value_len: usize) -> PathBuf {
    let mutations: Vec<Mutation> = (0..partitions)
        .map(|i| {
            Mutation::builder(DecoratedKey::from_bytes(format!("p{i}").into_bytes()).unwrap())
                .cell(
                    vec![1],
                    4,
                    Cell::live(vec![b'v'; value_len], Timestamp::from_micros(7)),
                )
                .build()
                .unwrap()
        })
        .collect();
    let mut writer = Writer::create(dir, WriterOptions::default()).unwrap();
    writer.write_all(&mut from_mutations(mutations)).unwrap();
    let committed = writer.commit().unwrap();
    component_path(dir, committed.generation, Component::Data)
}

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn dump_stats_verify() {
    let dir = tempfile::tempdir().unwrap();
    let data = write_table(dir.path(), 3, 1);

    let out = tool().arg("dump").arg(&data).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Three partitions of start, row, end.
    assert_eq!(lines.len(), 9);
    assert_eq!(lines[0]["type"], "partition_start");
    assert_eq!(lines[1]["row"]["cells"][0]["value"], "76");

    // "p1" in hex.
    let out = tool()
        .args(["dump", "--key", "7031"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 3);

    let out = tool().arg("stats").arg(&data).output().unwrap();
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats["partitions"], 3);
    assert_eq!(stats["clustering_rows"], 3);
    assert_eq!(stats["min_timestamp"], 7);

    let out = tool().arg("verify").arg(&data).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
}

#[test]
fn dump_of_an_absent_key_says_so_with_status_3() {
    let dir = tempfile::tempdir().unwrap();
    let data = write_table(dir.path(), 3, 1);
    // "p9" in hex: no such partition.
    let out = tool()
        .args(["dump", "--key", "7039"])
        .arg(&data)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(out.stdout.is_empty());
    let err = stderr_of(&out);
    assert!(
        err.contains("no partition with key 7039") && err.contains("generation 1"),
        "{err}"
    );
}

#[test]
fn output_into_a_closed_pipe_ends_quietly_with_status_0() {
    let dir = tempfile::tempdir().unwrap();
    // About 2,000 lines of 400+ bytes: far more than a pipe buffers, so the
    // tool is still writing when the reader goes away.
    let data = write_table(dir.path(), 700, 300);
    let mut child = tool()
        .arg("dump")
        .arg(&data)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader (and so the pipe's read end) is dropped here, as `head -1`
    // exits after one line.
    assert!(first.contains("partition_start"), "{first}");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(out.stderr.is_empty(), "{}", stderr_of(&out));
}

#[test]
fn a_missing_directory_is_reported_as_missing_with_status_3() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-dir").join("sst-1-Data.db");
    for command in ["dump", "stats", "verify"] {
        let out = tool().arg(command).arg(&missing).output().unwrap();
        assert_eq!(out.status.code(), Some(3), "{command}");
        let err = stderr_of(&out);
        assert!(
            err.contains("directory")
                && err.contains("no-such-dir")
                && err.contains("does not exist"),
            "{command}: {err}"
        );
    }
}

#[test]
fn a_missing_sstable_has_status_3() {
    let dir = tempfile::tempdir().unwrap();
    let out = tool()
        .arg("stats")
        .arg(dir.path().join("sst-5-Data.db"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stderr_of(&out).contains("no committed sstable with generation 5"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn corruption_has_status_4_and_names_file_component_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let data = write_table(dir.path(), 3, 1);
    let mut bytes = std::fs::read(&data).unwrap();
    let last = bytes.len() - 6;
    bytes[last] ^= 1;
    std::fs::write(&data, bytes).unwrap();
    let out = tool().arg("verify").arg(&data).output().unwrap();
    assert_eq!(out.status.code(), Some(4));
    let err = stderr_of(&out);
    assert!(
        err.contains("Data") && err.contains("offset") && err.contains("sst-1-Data.db"),
        "{err}"
    );

    // A component the TOC lists is gone: the sstable is incomplete.
    std::fs::remove_file(component_path(dir.path(), 1, Component::Index)).unwrap();
    let out = tool().arg("stats").arg(&data).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr_of(&out));
}

#[test]
fn bad_arguments_have_status_2() {
    let dir = tempfile::tempdir().unwrap();
    let data = write_table(dir.path(), 1, 1);
    let cases: Vec<Vec<std::ffi::OsString>> = vec![
        vec!["frobnicate".into()],
        vec!["dump".into()],
        vec![
            "dump".into(),
            "--key".into(),
            "xyz".into(),
            data.clone().into(),
        ],
        vec!["stats".into(), dir.path().join("nonsense.db").into()],
    ];
    for args in cases {
        let out = tool().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr_of(&out));
        assert!(!stderr_of(&out).is_empty(), "{args:?}");
    }
}

#[test]
fn help_documents_the_exit_statuses() {
    let out = tool().arg("--help").output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    for line in [
        "0  success",
        "2  bad arguments",
        "3  not found",
        "4  the sstable is corrupt",
    ] {
        assert!(help.contains(line), "--help lacks {line:?}:\n{help}");
    }
}
