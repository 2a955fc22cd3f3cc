//! Smoke runs of issue 22's two experiments, scaled down to a few seconds
//! (the commands in BENCHMARKS.md with a tiny budget and load): the
//! soft-limit comparison on one shared modelled device, and the separate
//! flush device against the shared one. Each run must finish without
//! errors, charge its devices where the options put the directories, and
//! leave the per-second table, HDR logs and JSON in its results directory.

use std::path::Path;
use std::process::Command;

fn run(args: &[&str], results: &Path) -> serde_json::Value {
    let output = Command::new(env!("CARGO_BIN_EXE_replica-stress"))
        .args(args)
        .arg(format!("--results-dir={}", results.display()))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("Device "), "{stdout}");
    serde_json::from_slice(&std::fs::read(results.join("summary.json")).unwrap()).unwrap()
}

fn device<'a>(summary: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    summary["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == name)
        .unwrap_or_else(|| panic!("no device {name} in {summary}"))
}

fn written(summary: &serde_json::Value, name: &str) -> u64 {
    device(summary, name)["bytes_written"].as_u64().unwrap()
}

#[test]
fn the_soft_limit_comparison_runs_on_one_shared_device() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("soft-limit");
    let v = run(
        &[
            "--compare",
            "--threads=8",
            "--partition-size=16KiB",
            "--partitions=2000",
            "--duration=2s",
            "--budget=4MiB",
            "--commitlog=periodic",
            "--device=disk=32MiB",
        ],
        &results,
    );
    for run in ["baseline", "candidate"] {
        let s = &v[run];
        assert_eq!(s["total_errors"], 0, "{s}");
        assert!(s["dirty_memory"]["flushes"].as_u64().unwrap() > 0, "{s}");
        // Flushes and the commit log both went through the one device.
        let disk = written(s, "disk");
        assert!(
            disk >= s["commitlog"]["bytes"].as_u64().unwrap() && disk > 0,
            "{s}"
        );
        let busy = device(s, "disk")["utilisation"].as_f64().unwrap();
        assert!(busy > 0.0 && busy < 1.2, "{s}");
    }
    assert_eq!(v["device_model"]["commitlog"], "disk");
    for policy in ["per-memtable", "soft-limit"] {
        assert!(results.join(format!("{policy}.ops.csv")).is_file());
        assert!(results.join(format!("{policy}.hlog")).is_file());
    }
}

#[test]
fn the_flush_device_experiment_runs_shared_and_separate() {
    let dir = tempfile::tempdir().unwrap();
    let common = [
        "--threads=8",
        "--partitions=3000",
        "--distribution=sequential",
        "--partition-size=1700B",
        "--columns=50",
        "--ops=3000",
        "--budget=2MiB",
        "--commitlog=periodic",
    ];
    // A: data and flushes on one device, the log on its own.
    let a_dir = dir.path().join("A");
    let mut a: Vec<&str> = common.to_vec();
    a.extend([
        "--device=data=32MiB",
        "--device=log=32MiB",
        "--data-dir-device=data",
        "--commitlog-device=log",
    ]);
    let a = run(&a, &a_dir);
    assert_eq!(a["total_operations"], 3000);
    assert!(written(&a, "data") > 0 && written(&a, "log") > 0, "{a}");
    assert_eq!(a["columns"], 50);

    // B: flushes on a second device.
    let b_dir = dir.path().join("B");
    let mut b: Vec<&str> = common.to_vec();
    b.extend([
        "--device=data=32MiB",
        "--device=flash=32MiB",
        "--device=log=32MiB",
        "--data-dir-device=data",
        "--flush-dir-device=flash",
        "--commitlog-device=log",
    ]);
    let b = run(&b, &b_dir);
    assert_eq!(b["total_operations"], 3000);
    assert!(
        written(&b, "flash") > 0,
        "flushes go to the flash device: {b}"
    );
    // Every byte the flushes wrote went to the flash device (each byte of
    // an sstable's files is charged to its directory's device before it is
    // written, and `flush_bytes` counts a flush's Data and Index once it
    // committed); compaction's outputs go to the data directory
    // (CASSANDRA-6357's layout). Not asserted: that nothing reached the
    // data device when no compaction was counted, since a job still
    // running when the figures are read has written without being counted
    // (it failed one run in four that way).
    let flushed = b["compaction"]["flush_bytes"].as_u64().unwrap();
    assert!(flushed > 0, "{b}");
    assert!(
        written(&b, "flash") >= flushed,
        "every flushed byte was charged to the flash device: {b}"
    );
    let compacted = b["compaction"]["bytes_compacted"].as_u64().unwrap_or(0);
    if compacted > 0 {
        assert!(
            written(&b, "data") >= compacted,
            "compaction writes its outputs to the data device: {b}"
        );
    }
    assert!(written(&b, "log") > 0, "{b}");
    assert_eq!(b["device_model"]["flush_dirs"], "flash");
}
