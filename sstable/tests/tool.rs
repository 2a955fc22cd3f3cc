//! The `sstable` binary: dump prints one JSON line per fragment, stats
//! prints the statistics, verify fails with a message naming the file,
//! component and offset on a corrupt file.

mod common;

use std::process::Command;

use common::*;
use mutation::{Cell, DecoratedKey, Mutation, Timestamp};
use sstable::{Component, component_path};

fn tool() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sstable"))
}

#[test]
fn dump_stats_verify() {
    let dir = tempfile::tempdir().unwrap();
    let ms: Vec<Mutation> = (0..3u8)
        .map(|i| {
            Mutation::builder(DecoratedKey::from_bytes(vec![b'p', i]).unwrap())
                .cell(
                    vec![i],
                    4,
                    Cell::live(b"v".to_vec(), Timestamp::from_micros(7)),
                )
                .build()
                .unwrap()
        })
        .collect();
    let (fragments, _) = canonical(&ms);
    let table = write(dir.path(), &fragments, small_options(false));
    let data = component_path(dir.path(), table.generation(), Component::Data);

    let out = tool().arg("dump").arg(&data).output().unwrap();
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), fragments.len());
    assert_eq!(lines[0]["type"], "partition_start");
    assert_eq!(lines[1]["row"]["cells"][0]["value"], "76");

    let out = tool()
        .args(["dump", "--key", "7001"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 3);

    let out = tool().arg("stats").arg(&data).output().unwrap();
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats["partitions"], 3);
    assert_eq!(stats["clustering_rows"], 3);
    assert_eq!(stats["min_timestamp"], 7);

    let out = tool().arg("verify").arg(&data).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let mut bytes = std::fs::read(&data).unwrap();
    let last = bytes.len() - 6;
    bytes[last] ^= 1;
    std::fs::write(&data, bytes).unwrap();
    let out = tool().arg("verify").arg(&data).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("Data") && err.contains("offset") && err.contains("sst-1-Data.db"),
        "{err}"
    );

    let out = tool()
        .arg("stats")
        .arg(dir.path().join("nonsense.db"))
        .output()
        .unwrap();
    assert!(!out.status.success());
}
