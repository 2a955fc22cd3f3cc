//! The `replica-stress` program reports the process's memory beside the
//! dirty-memory budget: its JSON summary holds the peak resident set
//! (Linux) and, from the program's counting allocator, the live heap and
//! its peak; the summary and the progress lines show them too.

use std::process::Command;

#[test]
fn the_json_summary_holds_peak_resident_set_and_live_heap() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("summary.json");
    let data = dir.path().join("data");
    let output = Command::new(env!("CARGO_BIN_EXE_replica-stress"))
        .args([
            "--threads=2",
            "--ops=2000",
            "--partitions=500",
            "--partition-size=4KiB",
            "--row-size=1KiB",
            "--budget=16MiB",
            "--commitlog=off",
        ])
        .arg(format!("--data-dir={}", data.display()))
        .arg(format!("--json={}", json.display()))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let m = &v["process_memory"];
    assert_eq!(m["dirty_budget_bytes"], 16 << 20);
    let live = m["live_heap_bytes"].as_u64().unwrap();
    let peak_heap = m["peak_live_heap_bytes"].as_u64().unwrap();
    // 2000 writes of 4 KiB went through the heap: the peak is at least
    // one partition's worth, and the live heap at the end is below it.
    assert!(peak_heap >= 4096 && live <= peak_heap, "{m}");
    // The memtable pool's segments come from the heap the program counts.
    let pool = m["memtable_pool_bytes"].as_u64().unwrap();
    assert!(pool > 0 && pool <= live, "{m}");
    if cfg!(target_os = "linux") {
        let rss = m["peak_resident_bytes"].as_u64().unwrap();
        assert!(rss >= 1 << 20, "{m}");
    } else {
        assert!(m["peak_resident_bytes"].is_null(), "{m}");
    }
    assert!(stdout.contains("Live heap                 :"), "{stdout}");
    assert!(stdout.contains("Peak resident set         :"), "{stdout}");
    assert!(
        stdout.lines().any(|l| l.contains("peak RSS    live heap")),
        "{stdout}"
    );
}
