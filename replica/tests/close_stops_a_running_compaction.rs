//! `close` stops a running compaction promptly, leaving its inputs intact
//! and no partial output; a job cut at each step of its replacement (the
//! crash-test hook) followed by a crash loses nothing and leaves no
//! compaction file after the reopen.

use std::path::Path;
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, Timestamp};
use replica::compaction::{IncrementalOptions, SizeTieredOptions, StrategyConfig};
use replica::{CommitLogMode, Database, DatabaseConfig, Error, HookPoint, TableSchema};

fn tiering() -> SizeTieredOptions {
    let mut o = SizeTieredOptions::default();
    o.min_sstable_size = 1;
    o
}

fn write(round: u32, i: u32) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(format!("r{round:02}-{i:04}")).unwrap())
        .cell(
            "c",
            0,
            Cell::live(vec![b'v'; 1024], Timestamp::from_micros(1)),
        )
        .build()
        .unwrap()
}

fn compaction_files(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("compaction-"))
        .collect()
}

fn verify_all(dir: &Path) -> usize {
    let listed = sstable::SstableDirectory::open(dir).unwrap();
    for &g in listed.generations() {
        sstable::Sstable::open(dir, g).unwrap().verify().unwrap();
    }
    listed.generations().len()
}

#[test]
fn close_stops_a_throttled_compaction_promptly_and_keeps_its_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = DatabaseConfig::new(dir.path());
    config.commitlog = CommitLogMode::Off;
    config.compaction.strategy = StrategyConfig::SizeTiered(tiering());
    // Far too slow to finish: about a minute for the job's output.
    config.compaction.bandwidth_limit = Some(16 << 10);
    let db = Database::open(config.clone()).unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    db.set_test_hook(Some(Arc::new(move |point| {
        if point == HookPoint::CompactionJobStarting {
            // The test stops listening after the first job.
            let _ = tx.lock().unwrap().send(());
        }
    })));
    for round in 0..4 {
        for i in 0..200 {
            db.apply("t", &write(round, i)).unwrap();
        }
        db.flush("t").unwrap();
    }
    rx.recv_timeout(Duration::from_secs(30))
        .expect("the fourth flush starts a compaction");
    let started = Instant::now();
    db.close().unwrap();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(10), "close took {took:?}");
    let m = db.metrics().compaction;
    assert_eq!(m.jobs_completed, 0, "{m:?}");
    drop(db);
    let table_dir = dir.path().join("t");
    assert_eq!(
        verify_all(&table_dir),
        4,
        "the inputs stay, no output is left"
    );
    assert!(compaction_files(&table_dir).is_empty());
    // Reopened without the limit, it compacts (in the background) and
    // reads the same.
    config.compaction.bandwidth_limit = None;
    let db = Database::open(config).unwrap();
    for round in 0..4 {
        for i in 0..200 {
            let w = write(round, i);
            assert_eq!(
                db.get("t", w.key(), ClusteringRange::full()).unwrap(),
                Some(w)
            );
        }
    }
    db.close().unwrap();
}

#[test]
fn a_job_cut_at_any_step_then_a_crash_loses_nothing() {
    let mut ics = IncrementalOptions::default();
    // Several output fragments per job: the steps repeat.
    ics.fragment_size = 48 << 10;
    ics.tiering = tiering();
    for (name, strategy) in [
        ("stcs", StrategyConfig::SizeTiered(tiering())),
        ("ics", StrategyConfig::IncrementalWith(ics)),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut config = DatabaseConfig::new(dir.path());
        config.commitlog = CommitLogMode::Off;
        config.compaction.strategy = strategy;
        let table_dir = dir.path().join("t");
        let mut rounds = 0;
        let mut injected = 0;
        for step in 1..=12 {
            let db = Database::open(config.clone()).unwrap();
            if step == 1 {
                db.create_table(TableSchema::new("t").unwrap()).unwrap();
            }
            // Stop background jobs at the step too, so none finishes.
            db.set_compaction_stop_after(Some(step));
            for _ in 0..4 {
                for i in 0..100 {
                    db.apply("t", &write(rounds, i)).unwrap();
                }
                db.flush("t").unwrap();
                rounds += 1;
            }
            match db.compact("t") {
                Err(Error::Compaction {
                    source: replica::compaction::Error::InjectedCrash(_),
                    ..
                }) => injected += 1,
                Ok(()) => {}
                Err(e) => panic!("{name} step {step}: {e:?}"),
            }
            db.crash();
            // Open recovers the half-done job (and may start new ones).
            let db = Database::open(config.clone()).unwrap();
            for round in 0..rounds {
                for i in 0..100 {
                    let w = write(round, i);
                    assert_eq!(
                        db.get("t", w.key(), ClusteringRange::full()).unwrap(),
                        Some(w),
                        "{name} step {step}: write {round}/{i}"
                    );
                }
            }
            db.close().unwrap();
            drop(db);
            assert!(
                compaction_files(&table_dir).is_empty(),
                "{name} step {step}: {:?}",
                compaction_files(&table_dir)
            );
            verify_all(&table_dir);
        }
        assert!(injected >= 6, "{name}: the hook cut {injected} jobs");
    }
}
