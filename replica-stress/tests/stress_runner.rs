//! The stress runner end to end against in-memory test targets: counts,
//! contents, errors, intervals, stops, pauses, and the reports.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Condvar, Mutex};

use common::{Injected, MemTarget};
use std::time::Duration;

use mutation::{DecoratedKey, Mutation};
use replica_stress::Error;
use replica_stress::{
    Distribution, HdrLog, IntervalReport, Mode, Observers, ProgressPrinter, Ratio, RunConfig,
    StopCondition, Target, TargetStats, WorkloadSpec, run, table_name,
};

fn spec(mode: Mode, distribution: Distribution) -> WorkloadSpec {
    WorkloadSpec {
        mode,
        ratio: Ratio {
            writes: 1,
            reads: 1,
        },
        partitions: 500,
        distribution,
        rows_per_partition: 3,
        row_size: 64,
        columns: 1,
        tables: 4,
        seed: 42,
    }
}

fn config(workload: WorkloadSpec, threads: usize, stop: StopCondition) -> RunConfig {
    RunConfig {
        label: "test".to_owned(),
        workload,
        threads,
        stop,
        interval: Duration::from_millis(20),
        memory: replica_stress::MemoryProbe::default(),
        async_in_flight: 0,
        interrupt: replica_stress::Interrupt::new(),
    }
}

fn no_observer() -> impl FnMut(&IntervalReport) -> Result<(), Error> {
    |_| Ok(())
}

#[test]
fn an_operation_count_is_run_exactly_and_lands_in_the_right_tables() {
    let target = MemTarget::default();
    let cfg = config(
        spec(Mode::Write, Distribution::Uniform),
        8,
        StopCondition::Operations(2000),
    );
    let s = run(&target, &cfg, &mut no_observer()).unwrap();
    assert_eq!(s.counts.ops, 2000);
    assert_eq!(s.counts.writes, 2000);
    assert_eq!(s.counts.partitions, 2000);
    assert_eq!(s.counts.rows, 6000);
    assert_eq!(s.counts.errors, 0);
    assert_eq!(target.applies.load(Ordering::Relaxed), 2000);
    assert!(s.latency.max_ms >= s.latency.median_ms);
    let tables = target.tables.lock().unwrap();
    for (name, partitions) in tables.iter() {
        let t: u64 = name.strip_prefix("stress_").unwrap().parse().unwrap();
        for key in partitions.keys() {
            let index: u64 = std::str::from_utf8(&key.key().as_bytes()[3..])
                .unwrap()
                .parse()
                .unwrap();
            assert_eq!(index % 4, t, "partition {index} in {name}");
        }
    }
    // Final figures come from the target.
    assert_eq!(s.flushes, 20);
    assert_eq!(s.peak_real_dirty, 2000 * 1024);
    assert_eq!(s.writers_blocked, Duration::from_millis(2000));
}

#[test]
fn equal_seeds_write_equal_data() {
    let contents = || {
        let target = MemTarget::default();
        let cfg = config(
            spec(Mode::Write, Distribution::Gaussian),
            1,
            StopCondition::Operations(300),
        );
        run(&target, &cfg, &mut no_observer()).unwrap();
        target.tables.into_inner().unwrap()
    };
    let a = contents();
    assert!(!a.is_empty());
    assert_eq!(a, contents());
}

#[test]
fn sequential_writes_then_reads_find_every_row() {
    let target = MemTarget::default();
    let write = config(
        spec(Mode::Write, Distribution::Sequential),
        5,
        StopCondition::Operations(500),
    );
    run(&target, &write, &mut no_observer()).unwrap();
    // Each thread walks its own residue class, so 500 operations over 5
    // threads cover the whole population if every thread did 100; they may
    // not have, so count what was written.
    let written: usize = target
        .tables
        .lock()
        .unwrap()
        .values()
        .map(BTreeMap::len)
        .sum();
    let read = config(
        spec(Mode::Read, Distribution::Sequential),
        1,
        StopCondition::Operations(500),
    );
    let s = run(&target, &read, &mut no_observer()).unwrap();
    assert_eq!((s.counts.reads, s.counts.writes), (500, 0));
    assert_eq!(s.counts.rows, written as u64 * 3);
}

#[test]
fn mixed_loads_count_reads_and_writes() {
    let target = MemTarget::default();
    let cfg = config(
        spec(Mode::Mixed, Distribution::Uniform),
        4,
        StopCondition::Operations(1000),
    );
    let s = run(&target, &cfg, &mut no_observer()).unwrap();
    assert_eq!(s.counts.reads + s.counts.writes, 1000);
    assert!(
        s.counts.reads > 300 && s.counts.writes > 300,
        "{:?}",
        s.counts
    );
    assert_eq!(s.counts.partitions, 1000);
    assert!(s.counts.rows >= s.counts.writes * 3);
}

#[test]
fn target_errors_are_counted_and_the_first_kept() {
    let target = MemTarget {
        fail_every: Some(10),
        ..MemTarget::default()
    };
    let cfg = config(
        spec(Mode::Write, Distribution::Uniform),
        4,
        StopCondition::Operations(1000),
    );
    let s = run(&target, &cfg, &mut no_observer()).unwrap();
    assert_eq!(s.counts.ops, 1000);
    assert_eq!(s.counts.errors, 100);
    assert_eq!(s.counts.partitions, 900);
    let first = s.first_error.clone().unwrap();
    assert!(first.starts_with("injected failure of apply #"), "{first}");
    assert!(
        s.to_string()
            .contains("Total errors              :        100")
    );
}

#[test]
fn a_duration_run_reports_every_interval_and_stops() {
    let target = MemTarget::default();
    let cfg = config(
        spec(Mode::Write, Distribution::Uniform),
        3,
        StopCondition::Duration(Duration::from_millis(200)),
    );
    let mut reports: Vec<IntervalReport> = Vec::new();
    let mut collect = |r: &IntervalReport| {
        reports.push(r.clone());
        Ok(())
    };
    let mut printer = ProgressPrinter::new(Vec::new());
    let mut observers = Observers::new();
    observers.push(&mut collect);
    observers.push(&mut printer);
    let s = run(&target, &cfg, &mut observers).unwrap();
    drop(observers);
    assert!(s.elapsed >= Duration::from_millis(200), "{:?}", s.elapsed);
    // Ten 20 ms intervals, fewer if a loaded machine woke the controller
    // late (a late interval is longer, never lost).
    assert!(reports.len() >= 2, "{} intervals", reports.len());
    for (i, r) in reports.iter().enumerate() {
        assert_eq!(r.index, i as u64);
        if i > 0 {
            let prev = &reports[i - 1];
            assert_eq!(
                r.start,
                prev.start + prev.length,
                "intervals are contiguous"
            );
        }
    }
    let last = reports.last().unwrap();
    assert_eq!(last.start + last.length, s.elapsed);
    assert_eq!(
        reports.iter().map(|r| r.counts.ops).sum::<u64>(),
        s.counts.ops
    );
    assert_eq!(
        reports.iter().map(|r| r.latency.len()).sum::<u64>(),
        s.counts.ops
    );
    assert_eq!(
        s.peak_real_dirty,
        reports.iter().map(|r| r.stats.real_dirty).max().unwrap()
    );
    let text = String::from_utf8(printer.into_inner()).unwrap();
    let table = text
        .strip_prefix(&format!("{}\n", replica_stress::PROGRESS_LEGEND))
        .expect("the legend opens the progress table");
    assert_eq!(table.lines().count(), reports.len() + 1);
}

#[test]
fn an_observer_error_stops_the_run_and_is_returned() {
    let target = MemTarget::default();
    let cfg = config(
        spec(Mode::Write, Distribution::Uniform),
        2,
        StopCondition::Duration(Duration::from_secs(3600)),
    );
    let mut calls = 0;
    let mut failing = |_: &IntervalReport| {
        calls += 1;
        Err(Error::Report {
            what: "progress line",
            detail: "disk full".to_owned(),
        })
    };
    let e = run(&target, &cfg, &mut failing).unwrap_err().to_string();
    assert!(e.contains("disk full"), "{e}");
    assert_eq!(calls, 1, "a failed observer is not called again");
}

/// A target whose first apply waits until the test opens a gate.
struct GatedTarget {
    inner: MemTarget,
    open: Mutex<bool>,
    opened: Condvar,
}

impl Target for GatedTarget {
    type Error = Injected;

    fn apply(&self, table: &str, mutation: Mutation) -> Result<(), Injected> {
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.opened.wait(open).unwrap();
        }
        drop(open);
        self.inner.apply(table, mutation)
    }

    fn read(&self, table: &str, key: &DecoratedKey) -> Result<u64, Injected> {
        self.inner.read(table, key)
    }

    fn stats(&self) -> TargetStats {
        self.inner.stats()
    }
}

#[test]
fn stalls_show_as_idle_intervals_and_the_longest_pause() {
    let target = GatedTarget {
        inner: MemTarget::default(),
        open: Mutex::new(false),
        opened: Condvar::new(),
    };
    let cfg = config(
        spec(Mode::Write, Distribution::Uniform),
        2,
        StopCondition::Operations(20),
    );
    let mut seen = 0;
    let mut open_after_three = |r: &IntervalReport| {
        seen += 1;
        if seen == 3 {
            assert_eq!(r.counts.ops, 0, "nothing completes while the gate is shut");
            *target.open.lock().unwrap() = true;
            target.opened.notify_all();
        }
        Ok(())
    };
    let s = run(&target, &cfg, &mut open_after_three).unwrap();
    assert_eq!(s.counts.ops, 20);
    assert!(s.idle_intervals >= 3, "{}", s.idle_intervals);
    assert!(
        s.longest_pause >= cfg.interval * 3,
        "the pause before the first completion spans three intervals: {:?}",
        s.longest_pause
    );
}

#[test]
fn a_panicking_target_propagates_instead_of_hanging() {
    struct Panics;
    impl Target for Panics {
        type Error = Injected;
        fn apply(&self, _: &str, _: Mutation) -> Result<(), Injected> {
            panic!("target bug");
        }
        fn read(&self, _: &str, _: &DecoratedKey) -> Result<u64, Injected> {
            Ok(0)
        }
        fn stats(&self) -> TargetStats {
            TargetStats::default()
        }
    }
    let cfg = config(
        spec(Mode::Write, Distribution::Uniform),
        2,
        StopCondition::Duration(Duration::from_secs(3600)),
    );
    let result = std::panic::catch_unwind(|| run(&Panics, &cfg, &mut no_observer()));
    assert!(result.is_err());
}

#[test]
fn bad_run_configs_are_refused() {
    let target = MemTarget::default();
    let mut cfg = config(
        spec(Mode::Write, Distribution::Uniform),
        0,
        StopCondition::Operations(1),
    );
    let e = run(&target, &cfg, &mut no_observer())
        .unwrap_err()
        .to_string();
    assert!(e.contains("threads"), "{e}");
    cfg.threads = 1;
    cfg.interval = Duration::ZERO;
    let e = run(&target, &cfg, &mut no_observer())
        .unwrap_err()
        .to_string();
    assert!(e.contains("interval"), "{e}");
    assert_eq!(target.applies.load(Ordering::Relaxed), 0);
}

#[test]
fn the_hdr_log_holds_every_operation() {
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    let target = MemTarget::default();
    let cfg = config(
        spec(Mode::Write, Distribution::Uniform),
        2,
        StopCondition::Duration(Duration::from_millis(100)),
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.hlog");
    let mut log = HdrLog::create(&path, std::time::SystemTime::now(), "test").unwrap();
    let s = run(&target, &cfg, &mut log).unwrap();
    log.finish().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let intervals = IntervalLogIterator::new(&bytes)
        .filter(|e| matches!(e, Ok(LogEntry::Interval(_))))
        .count();
    assert!(intervals >= 2, "{intervals}");
    assert!(s.counts.ops > 0);
    assert_eq!(table_name(3), "stress_3");
}

#[test]
fn the_targets_own_high_water_mark_beats_the_samples() {
    /// Reports a high-water mark of 1 TiB: from the start (`before`), or
    /// once written to.
    struct Peaky(MemTarget, bool);
    impl Target for Peaky {
        type Error = Injected;
        fn apply(&self, table: &str, m: Mutation) -> Result<(), Injected> {
            self.0.apply(table, m)
        }
        fn read(&self, table: &str, key: &DecoratedKey) -> Result<u64, Injected> {
            self.0.read(table, key)
        }
        fn stats(&self) -> TargetStats {
            let stats = self.0.stats();
            let written = stats.real_dirty > 0;
            TargetStats {
                peak_real_dirty: if self.1 || written { 1 << 40 } else { 0 },
                ..stats
            }
        }
    }
    let cfg = config(
        spec(Mode::Write, Distribution::Uniform),
        2,
        StopCondition::Operations(10),
    );
    let s = run(
        &Peaky(MemTarget::default(), false),
        &cfg,
        &mut no_observer(),
    )
    .unwrap();
    assert_eq!(s.peak_real_dirty, 1 << 40);
    // A mark the run did not raise is an earlier phase's (a populate
    // phase): the run's own samples stand.
    let s = run(&Peaky(MemTarget::default(), true), &cfg, &mut no_observer()).unwrap();
    assert_eq!(s.peak_real_dirty, 10 * 1024, "ten 1 KiB applies sampled");
}

/// `--async`: a mixed load with 16 writes in flight per thread on a target
/// whose async write is the default (ready at once) runs the exact count.
#[test]
fn an_async_run_issues_the_exact_operation_count() {
    let target = MemTarget::default();
    let mut cfg = config(
        spec(Mode::Mixed, Distribution::Uniform),
        3,
        StopCondition::Operations(1500),
    );
    cfg.async_in_flight = 16;
    let s = run(&target, &cfg, &mut no_observer()).unwrap();
    assert_eq!(s.counts.ops, 1500);
    assert_eq!(s.counts.writes + s.counts.reads, 1500);
    assert_eq!(s.counts.errors, 0);
    assert_eq!(target.applies.load(Ordering::Relaxed), s.counts.writes);
}
