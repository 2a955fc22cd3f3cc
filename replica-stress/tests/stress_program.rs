//! The replica-stress program, minus its database: one run and a
//! `--compare` pair against an in-memory test target, with every report.

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use clap::Parser;
use common::MemTarget;
use replica_stress::{Error, HeapFigures, MemoryProbe};
use replica_stress::{
    FlushPolicyChoice, RunConfig, StressOptions, TargetFactory, execute, hdr_log_path, policies,
    table_name,
};

/// Opens a fresh in-memory target per run and records what it was asked.
#[derive(Default)]
struct Factory {
    opened: Vec<(FlushPolicyChoice, String)>,
    closed: usize,
    fail_open: bool,
}

impl TargetFactory for Factory {
    type Target = MemTarget;

    fn open(&mut self, policy: FlushPolicyChoice, config: &RunConfig) -> Result<MemTarget, Error> {
        if self.fail_open {
            // A database's error, as a factory over one passes it on.
            return Err(Error::from(replica::Error::UnknownTable {
                name: table_name(0),
            }));
        }
        self.opened.push((policy, config.label.clone()));
        Ok(MemTarget::default())
    }

    fn close(&mut self, _: MemTarget) -> Result<(), Error> {
        self.closed += 1;
        Ok(())
    }
}

fn options(extra: &[&str]) -> StressOptions {
    let base = [
        "replica-stress",
        "--threads=3",
        "--ops=300",
        "--partitions=100",
        "--partition-size=1KiB",
        "--row-size=256B",
        "--tables=2",
    ];
    StressOptions::try_parse_from(base.iter().chain(extra)).unwrap()
}

fn hlog_intervals(path: &Path) -> usize {
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    let bytes = std::fs::read(path).unwrap();
    IntervalLogIterator::new(&bytes)
        .filter(|e| matches!(e, Ok(LogEntry::Interval(_))))
        .count()
}

#[test]
fn one_run_prints_progress_and_a_summary_and_writes_the_reports() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("summary.json");
    let hlog = dir.path().join("run.hlog");
    let o = options(&[
        "--flush-policy=per-memtable",
        &format!("--json={}", json.display()),
        &format!("--hdr-log={}", hlog.display()),
    ]);
    let mut factory = Factory::default();
    let mut out = Vec::new();
    let summaries = execute(&o, &mut factory, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();

    assert_eq!(summaries.len(), 1);
    assert_eq!(summaries[0].counts.ops, 300);
    assert_eq!(summaries[0].counts.rows, 1200);
    assert_eq!(
        factory.opened,
        [(FlushPolicyChoice::PerMemtable, "per-memtable".to_owned())]
    );
    assert_eq!(factory.closed, 1);
    assert!(
        text.starts_with("Running write with 3 threads for 300 operations"),
        "{text}"
    );
    assert!(text.contains("flush policy per-memtable"), "{text}");
    assert!(
        text.contains("op/s    p99 ms"),
        "progress header missing:\n{text}"
    );
    assert!(text.contains("Results (per-memtable):"), "{text}");
    assert!(
        text.contains("Total partitions          :        300"),
        "{text}"
    );

    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["total_operations"], 300);
    assert_eq!(v["label"], "per-memtable");
    assert!(hlog_intervals(&hlog) >= 1);
}

#[test]
fn compare_runs_both_policies_baseline_first_and_prints_the_ratios() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("compare.json");
    let hlog = dir.path().join("run.hlog");
    let o = options(&[
        "--compare",
        &format!("--json={}", json.display()),
        &format!("--hdr-log={}", hlog.display()),
    ]);
    assert_eq!(
        policies(&o),
        [FlushPolicyChoice::PerMemtable, FlushPolicyChoice::SoftLimit]
    );
    // Each run's memory peaks start afresh (the heap counter's here).
    static RESETS: AtomicUsize = AtomicUsize::new(0);
    fn heap() -> HeapFigures {
        HeapFigures { live: 1, peak: 1 }
    }
    fn reset() {
        RESETS.fetch_add(1, Ordering::Relaxed);
    }
    let mut o = o;
    o.memory = MemoryProbe::with_heap_counter(heap).with_heap_peak_reset(reset);
    let mut factory = Factory::default();
    let mut out = Vec::new();
    let summaries = execute(&o, &mut factory, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(RESETS.load(Ordering::Relaxed), 2, "once before each run");

    assert_eq!(summaries.len(), 2);
    assert_eq!(summaries[0].label, "per-memtable");
    assert_eq!(summaries[1].label, "soft-limit");
    assert_eq!(factory.closed, 2);
    let table = text
        .lines()
        .skip_while(|l| !l.contains("per-memtable") || !l.contains("soft/per"))
        .collect::<Vec<_>>();
    assert!(
        table
            .iter()
            .any(|l| l.starts_with("Total partitions") && l.ends_with("1.00x")),
        "{text}"
    );

    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["baseline"]["label"], "per-memtable");
    assert_eq!(v["candidate"]["label"], "soft-limit");
    assert_eq!(v["ratios"]["Total partitions"], 1.0);
    for policy in [FlushPolicyChoice::PerMemtable, FlushPolicyChoice::SoftLimit] {
        let path = hdr_log_path(&hlog, policy, true);
        assert!(hlog_intervals(&path) >= 1, "{}", path.display());
    }
    assert_eq!(
        hdr_log_path(&hlog, FlushPolicyChoice::SoftLimit, true),
        dir.path().join("run.soft-limit.hlog")
    );
    assert_eq!(
        hdr_log_path(&hlog, FlushPolicyChoice::SoftLimit, false),
        hlog
    );
}

#[test]
fn bad_options_and_factory_errors_stop_the_program() {
    let mut factory = Factory::default();
    let mut out = Vec::new();
    let e = execute(&options(&["--threads=0"]), &mut factory, &mut out).unwrap_err();
    assert!(e.to_string().contains("--threads"), "{e}");
    assert!(factory.opened.is_empty(), "nothing runs on bad options");

    let mut failing = Factory {
        fail_open: true,
        ..Factory::default()
    };
    let e = execute(&options(&[]), &mut failing, &mut out).unwrap_err();
    assert!(e.to_string().contains("stress_0"), "{e}");

    let dir = tempfile::tempdir().unwrap();
    let unwritable = dir.path().join("missing").join("s.json");
    let mut factory = Factory::default();
    let e = execute(
        &options(&[&format!("--json={}", unwritable.display())]),
        &mut factory,
        &mut out,
    )
    .unwrap_err();
    assert!(e.to_string().contains("missing"), "{e}");
    assert!(
        factory.opened.is_empty(),
        "an output that cannot be written fails before the run"
    );
}

#[test]
fn a_results_directory_gets_the_per_second_table_the_hdr_log_and_the_summaries() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results").join("run-1");
    let o = options(&[
        "--compare",
        "--columns=4",
        "--device=disk=100MiB",
        &format!("--results-dir={}", results.display()),
    ]);
    let mut factory = Factory::default();
    let mut out = Vec::new();
    execute(&o, &mut factory, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("256 B rows (4 columns)"), "{text}");
    assert!(
        text.contains(
            "devices disk=100.0 MiB/s (data dirs on disk, flush dirs on disk, commit log on disk)"
        ),
        "{text}"
    );
    for policy in ["per-memtable", "soft-limit"] {
        let csv = std::fs::read_to_string(results.join(format!("{policy}.ops.csv"))).unwrap();
        let mut lines = csv.lines();
        assert!(
            lines
                .next()
                .unwrap()
                .starts_with("time_s,ops,op_rate,errors,p50_ms")
        );
        let ops: u64 = lines
            .map(|l| l.split(',').nth(1).unwrap().parse::<u64>().unwrap())
            .sum();
        assert_eq!(ops, 300, "every operation is in one row");
        assert!(hlog_intervals(&results.join(format!("{policy}.hlog"))) >= 1);
        let summary =
            std::fs::read_to_string(results.join(format!("{policy}.summary.txt"))).unwrap();
        assert!(summary.starts_with("Running write"), "{summary}");
        assert!(
            summary.contains(&format!("Results ({policy}):")),
            "{summary}"
        );
    }
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(results.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(v["baseline"]["label"], "per-memtable");
    assert_eq!(v["columns"], 4);
    assert_eq!(v["device_model"]["devices"][0]["name"], "disk");
    assert_eq!(v["device_model"]["flush_dirs"], "disk");
}
