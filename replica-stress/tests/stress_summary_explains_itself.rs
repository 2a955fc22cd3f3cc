//! `replica-stress`'s summary explains its figures: what the memory pool
//! holds beside the peak resident set, writers' blocked time per thread,
//! write amplification defined in its line, a legend for the progress
//! columns; the populate phase's work reported apart from the measured
//! run's; a warning when `read` finds nothing to read; and with
//! `--compare`, each policy's own memory peaks and counts as integers.

use std::path::Path;
use std::process::Command;

/// Runs the program with a JSON summary in `dir`; returns its standard
/// output and the JSON.
fn run(dir: &Path, args: &[&str]) -> (String, serde_json::Value) {
    let json = dir.join("summary.json");
    let output = Command::new(env!("CARGO_BIN_EXE_replica-stress"))
        .args([
            "--threads=2",
            "--partition-size=4KiB",
            "--row-size=1KiB",
            "--budget=16MiB",
            "--prefault=off",
        ])
        .args(args)
        .arg(format!("--json={}", json.display()))
        .env("TMPDIR", dir)
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

fn line<'a>(text: &'a str, start: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no line {start:?} in\n{text}"))
}

#[test]
fn a_write_summary_says_what_its_figures_contain() {
    let dir = tempfile::tempdir().unwrap();
    let (text, v) = run(dir.path(), &["--ops=3000", "--partitions=1000"]);
    assert!(text.contains("unspooled dirty = the part flushes have not yet written out"));
    assert!(text.contains("WA = write amplification"));
    assert!(
        line(&text, "Peak resident set").contains("% of the memory pool below"),
        "{text}"
    );
    // 16 MiB + 10 MiB of system tables, doubled: the cache has the rest.
    assert_eq!(
        line(&text, "Memory pool (configured)"),
        "Memory pool (configured)  :   64.0 MiB = dirty budget 16.0 MiB + system tables 10.0 MiB \
         + row cache share 38.0 MiB"
    );
    assert!(
        line(&text, "Time writers blocked").contains("summed over 2 client threads"),
        "{text}"
    );
    assert!(
        line(&text, "Write amplification").contains("(sstable bytes written: flushes"),
        "{text}"
    );
    let m = &v["process_memory"];
    assert_eq!(m["memory_pool_limit_bytes"], 64 << 20);
    assert_eq!(m["cache_share_bytes"], 38 << 20);
    assert_eq!(v["dirty_memory"]["threads"], 2);
    assert_eq!(v["reads_found_nothing"], false);
}

#[test]
fn read_reports_its_population_apart_from_the_measured_figures() {
    let dir = tempfile::tempdir().unwrap();
    // 2000 partitions of 4 KiB: 8 MiB, half the budget, written and
    // flushed first; the reads then flush nothing and log nothing.
    let (text, v) = run(
        dir.path(),
        &[
            "read",
            "--ops=2000",
            "--partitions=2000",
            "--commitlog=periodic",
        ],
    );
    let populated = line(&text, "Populated 2000 partitions");
    assert!(
        populated.contains("flushes (") && populated.contains("commit log"),
        "{populated}"
    );
    assert!(
        populated.ends_with("none of this phase is in the figures below"),
        "{populated}"
    );
    assert_eq!(v["dirty_memory"]["flushes"], 0, "{}", v["dirty_memory"]);
    assert_eq!(v["commitlog"]["bytes"], 0, "{}", v["commitlog"]);
    assert_eq!(v["compaction"]["user_bytes"], 0, "{}", v["compaction"]);
    assert_eq!(v["reads_found_nothing"], false);
    assert_eq!(v["total_rows_read"], 2000 * 4);
    assert!(!text.contains("Warning"), "{text}");
    assert!(!dir.path().read_dir().unwrap().any(|e| {
        e.unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with("replica-stress-")
    }));
}

#[test]
fn read_of_an_empty_directory_warns_before_and_after() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("empty");
    let (text, v) = run(
        dir.path(),
        &[
            "read",
            "--ops=500",
            "--partitions=100",
            &format!("--data-dir={}", data.display()),
        ],
    );
    assert!(
        text.contains("Warning: the data directory holds no data (no sstables, empty memtables)"),
        "{text}"
    );
    assert!(
        line(
            &text,
            "Warning                   : none of the 500 reads found a row"
        )
        .contains("--populate yes"),
        "{text}"
    );
    assert_eq!(v["reads_found_nothing"], true);
    assert_eq!(v["total_rows_read"], 0);
}

#[test]
fn compare_reports_each_policys_own_peaks_and_whole_counts() {
    let dir = tempfile::tempdir().unwrap();
    let (text, v) = run(
        dir.path(),
        &[
            "--compare",
            "--ops=3000",
            "--partitions=1000",
            "--commitlog=off",
        ],
    );
    let peak = |run: &str, figure: &str| {
        v[run]["process_memory"][figure]
            .as_u64()
            .unwrap_or_else(|| panic!("{run} {figure}: {}", v[run]))
    };
    // The second run no longer inherits the first's peaks.
    assert_ne!(
        peak("baseline", "peak_live_heap_bytes"),
        peak("candidate", "peak_live_heap_bytes")
    );
    if cfg!(target_os = "linux") {
        assert_ne!(
            peak("baseline", "peak_resident_bytes"),
            peak("candidate", "peak_resident_bytes")
        );
    }
    // Counts print as whole numbers in the comparison (the last table).
    let table = &text[text.rfind("soft/per").expect("the comparison")..];
    let partitions = line(table, "Total partitions ");
    assert!(
        partitions.contains(" 3000 ") && !partitions.contains("3000.00"),
        "{partitions}"
    );
    let flushes = line(table, "Flushes ");
    assert!(!flushes.contains(".00 "), "{flushes}");
    assert!(
        line(table, "Op rate (op/s)").contains('.'),
        "rates keep decimals"
    );
}
