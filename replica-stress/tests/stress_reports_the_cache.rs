//! `replica-stress` runs with the row cache by default, with a given size
//! (`--cache-size`) or without one (`--no-cache`), and reports the hit
//! ratio in its summary, progress header and JSON.

use std::process::Command;

fn run(extra: &[&str]) -> (String, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("summary.json");
    let data = dir.path().join("data");
    let output = Command::new(env!("CARGO_BIN_EXE_replica-stress"))
        .args([
            "mixed",
            "--threads=2",
            "--ops=2000",
            "--partitions=200",
            "--partition-size=1KiB",
            "--budget=16MiB",
            "--commitlog=off",
        ])
        .args(extra)
        .arg(format!("--data-dir={}", data.display()))
        .arg(format!("--json={}", json.display()))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let v = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    (stdout, v)
}

#[test]
fn the_cache_is_on_by_default_sized_or_off_and_its_hit_ratio_reported() {
    for extra in [&[][..], &["--cache-size=8MiB"][..]] {
        let (stdout, v) = run(extra);
        let cache = &v["cache"];
        assert_eq!(cache["enabled"], true, "{extra:?}: {cache}");
        let (hits, misses) = (
            cache["hits"].as_u64().unwrap(),
            cache["misses"].as_u64().unwrap(),
        );
        // Reads of 200 partitions: the first read of each misses at most.
        assert!(hits + misses > 0 && misses <= 200 + 2 * 200, "{cache}");
        let ratio = cache["hit_ratio"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&ratio), "{cache}");
        assert!(stdout.contains("Row cache hit ratio       :"), "{stdout}");
        assert!(stdout.contains("cache hit"), "progress header: {stdout}");
    }
    let (stdout, v) = run(&["--no-cache"]);
    assert_eq!(v["cache"]["enabled"], false, "{}", v["cache"]);
    assert!(v["cache"]["hit_ratio"].is_null());
    assert!(
        stdout.contains("Row cache                 :        off"),
        "{stdout}"
    );
}

#[test]
fn bad_cache_options_are_refused_naming_the_option() {
    for (args, needle) in [
        (&["--cache-size=4KiB"][..], "--cache-size"),
        (&["--cache-size=8MiB", "--no-cache"][..], "--no-cache"),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_replica-stress"))
            .args(["--ops=10", "--commitlog=off"])
            .args(args)
            .output()
            .unwrap();
        assert!(!output.status.success(), "{args:?} was accepted");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
}
