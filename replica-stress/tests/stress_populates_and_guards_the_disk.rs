//! `replica-stress` prepares a run that measures something: `read` and
//! `mixed` in a fresh directory first write their population (a phase of
//! its own, outside the figures), a population that cannot fit the data
//! directory is refused before anything runs, and a run stops with a
//! warning when the disk runs low instead of failing every write.

mod common;

use clap::Parser;
use common::MemTarget;
use replica_stress::Error;
use replica_stress::FlushPolicyChoice;
use replica_stress::{DISK_RESERVE, RunConfig, StressOptions, TargetFactory, execute};

/// Opens in-memory targets reporting `free_space`.
#[derive(Default)]
struct Factory {
    free_space: Option<u64>,
    closed: usize,
    flushes: u64,
}

impl TargetFactory for Factory {
    type Target = MemTarget;

    fn open(&mut self, _: FlushPolicyChoice, _: &RunConfig) -> Result<MemTarget, Error> {
        Ok(MemTarget {
            free_space: self.free_space,
            ..MemTarget::default()
        })
    }

    fn close(&mut self, target: MemTarget) -> Result<(), Error> {
        self.closed += 1;
        self.flushes += target.flushes.load(std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
}

fn options(args: &[&str]) -> StressOptions {
    let base = [
        "replica-stress",
        "--threads=3",
        "--partitions=100",
        "--partition-size=1KiB",
        "--row-size=256B",
        "--tables=2",
        // The machine-sized default pool, not touched whole at open.
        "--prefault=off",
    ];
    StressOptions::try_parse_from(base.iter().chain(args)).unwrap()
}

#[test]
fn read_in_a_fresh_directory_reads_a_written_population() {
    let o = options(&["read", "--ops=300"]);
    assert!(o.populates());
    let mut factory = Factory::default();
    let mut out = Vec::new();
    let summaries = execute(&o, &mut factory, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("Populated 100 partitions (0.1 MiB)"),
        "{text}"
    );
    assert!(text.contains("written first (populate phase)"), "{text}");
    let s = &summaries[0];
    // The populate phase's writes are not in the figures ...
    assert_eq!(
        (s.counts.ops, s.counts.writes, s.counts.reads),
        (300, 0, 300)
    );
    // ... and every read found its partition's 4 rows.
    assert_eq!(s.counts.rows, 300 * 4);
    assert_eq!(factory.flushes, 1, "the population is flushed");
    assert_eq!(factory.closed, 1);
}

#[test]
fn without_populating_a_read_finds_nothing() {
    let o = options(&["read", "--ops=300", "--populate=no"]);
    assert!(!o.populates());
    let mut factory = Factory::default();
    let mut out = Vec::new();
    let summaries = execute(&o, &mut factory, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(!text.contains("Populated"), "{text}");
    assert_eq!(summaries[0].counts.rows, 0);
    assert_eq!(factory.flushes, 0);
}

#[test]
fn mixed_populates_and_its_reads_find_rows() {
    let o = options(&["mixed", "--ops=300"]);
    let mut factory = Factory::default();
    let summaries = execute(&o, &mut factory, &mut Vec::new()).unwrap();
    let c = summaries[0].counts;
    assert_eq!(c.writes + c.reads, 300);
    // Writes and reads both count 4 rows each: no read missed.
    assert_eq!(c.rows, 300 * 4);
    // A mixed run reports its reads' and writes' latencies apart too.
    let s = &summaries[0];
    let (reads, writes) = (s.read_latency.unwrap(), s.write_latency.unwrap());
    assert!(reads.max_ms > 0.0 && writes.max_ms > 0.0);
    assert!(reads.max_ms.max(writes.max_ms) <= s.latency.max_ms);
    let json = s.to_json();
    assert!(
        json["read_latency_ms"]["p99"].as_f64().unwrap() > 0.0,
        "{json}"
    );
    assert!(s.to_string().contains("Read latency "), "{s}");
    // A write-only run has no split.
    let o = options(&["write", "--ops=30"]);
    let w = &execute(&o, &mut Factory::default(), &mut Vec::new()).unwrap()[0];
    assert!(w.read_latency.is_none() && w.write_latency.is_none());
    assert!(w.to_json()["read_latency_ms"].is_null());
}

#[test]
fn a_population_that_cannot_fit_is_refused_naming_both_figures() {
    let o = options(&[
        "mixed",
        "--ops=300",
        "--partitions=10k",
        "--partition-size=1MiB",
    ]);
    let mut factory = Factory {
        free_space: Some(DISK_RESERVE + (5 << 30)),
        ..Factory::default()
    };
    let mut out = Vec::new();
    let e = execute(&o, &mut factory, &mut out).unwrap_err();
    assert!(matches!(e, Error::NotEnoughDisk { .. }), "{e}");
    let e = e.to_string();
    let needed = (10_000u64 << 20).to_string();
    let available = (DISK_RESERVE + (5 << 30)).to_string();
    assert!(e.contains(&needed) && e.contains(&available), "{e}");
    assert!(e.contains("/mem"), "{e}");
    assert_eq!(factory.closed, 1, "the target is closed");
    assert_eq!(factory.flushes, 0, "nothing was written");
}

#[test]
fn a_run_stops_with_a_warning_when_the_disk_runs_low() {
    // Each apply uses 1 MiB of the test target's space: 40 of them reach
    // the reserve, long before the operations run out.
    let o = options(&["write", "--ops=100M", "--threads=1"]);
    let mut factory = Factory {
        free_space: Some(DISK_RESERVE + (40 << 20)),
        ..Factory::default()
    };
    let mut out = Vec::new();
    let summaries = execute(&o, &mut factory, &mut out).unwrap();
    let s = &summaries[0];
    let why = s.stopped_early.as_deref().expect("stopped early");
    assert!(why.contains("/mem") && why.contains("reserve"), "{why}");
    assert!(s.counts.ops < 100_000_000);
    assert_eq!(s.counts.errors, 0);
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("Stopped early"), "{text}");
}
