//! `drop_table` stops the table's running compaction promptly and removes
//! its directory with the compaction's files; the database reopens
//! without it, and a table of the same name starts empty.

use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, Timestamp};
use replica::compaction::{SizeTieredOptions, StrategyConfig};
use replica::{CommitLogMode, Database, DatabaseConfig, HookPoint, TableSchema};

fn write(i: u32) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(format!("k{i:05}")).unwrap())
        .cell(
            "c",
            0,
            Cell::live(vec![b'v'; 1024], Timestamp::from_micros(1)),
        )
        .build()
        .unwrap()
}

#[test]
fn drop_table_stops_a_running_compaction_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = DatabaseConfig::new(dir.path());
    config.commitlog = CommitLogMode::Off;
    let mut stcs = SizeTieredOptions::default();
    stcs.min_sstable_size = 1;
    config.compaction.strategy = StrategyConfig::SizeTiered(stcs);
    // Far too slow to finish on its own.
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
    for f in 0..4 {
        for i in 0..200 {
            db.apply("t", &write(f * 200 + i)).unwrap();
        }
        db.flush("t").unwrap();
    }
    rx.recv_timeout(Duration::from_secs(30))
        .expect("the fourth flush starts a compaction");
    let started = Instant::now();
    db.drop_table("t").unwrap();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(10), "drop_table took {took:?}");
    assert!(
        !dir.path().join("t").exists(),
        "the table's directory, compaction files included, is gone"
    );
    assert_eq!(db.metrics().compaction.jobs_completed, 0);
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    assert_eq!(
        db.get("t", write(1).key(), ClusteringRange::full())
            .unwrap(),
        None
    );
    db.close().unwrap();
    drop(db);
    let db = Database::open(config).unwrap();
    assert_eq!(db.metrics().sstables(), 0);
    db.close().unwrap();
}
