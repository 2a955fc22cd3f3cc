//! A flushed memtable's memory is held against the real dirty limit while
//! the row cache takes its data (ScyllaDB #1942), but released as the
//! update passes its partitions, not all at once at its end: writers held
//! at the real limit are let in as the update goes. (Held whole, it kept
//! every writer of the README's run waiting for the whole update, 170-820
//! ms a flush.) The flush is paused before the update and at its first
//! release: real dirty memory fell in between, with the update not done
//! (the memtable still listed), and is back to the active memtable's once
//! the flush ends.

mod pause;

use std::sync::Arc;
use std::thread;

use mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, PartitionRange, Timestamp};
use pause::Pause;
use replica::{CommitLogMode, Database, DatabaseConfig, HookPoint, TableSchema};

const PARTITIONS: u32 = 64;

fn write(i: u32) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(format!("pk{i:04}")).unwrap())
        .cell(
            "r",
            0,
            Cell::live(vec![i as u8; 4 << 10], Timestamp::from_micros(1)),
        )
        .build()
        .unwrap()
}

#[test]
fn the_update_releases_the_memtable_partition_by_partition() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = DatabaseConfig::new(dir.path());
    config.dirty_memory_budget = 8 << 20;
    config.commitlog = CommitLogMode::Off;
    let db = Arc::new(Database::open(config).unwrap());
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    // The ring known: every flushed partition enters the cache.
    let mut scan = db.scan("t", PartitionRange::full()).unwrap();
    assert!(mutation::to_mutations(&mut scan).unwrap().is_empty());
    for i in 0..PARTITIONS {
        db.apply("t", &write(i)).unwrap();
    }
    let before_update = Pause::armed();
    let released = Pause::armed();
    {
        let (before_update, released) = (Arc::clone(&before_update), Arc::clone(&released));
        db.set_test_hook(Some(Arc::new(move |point| match point {
            HookPoint::FlushBeforeCacheUpdate => before_update.stop_here(),
            HookPoint::CacheUpdateReleasedMemory => released.stop_here(),
            _ => {}
        })));
    }
    let flusher = {
        let db = Arc::clone(&db);
        thread::spawn(move || db.flush("t"))
    };
    before_update.wait_reached();
    let held = db.metrics().user.real_dirty;
    let memtable = db.metrics().tables[0].real_dirty;
    assert!(held >= memtable && memtable > 0, "{held} / {memtable}");
    before_update.release();
    assert!(
        released.wait_reached_unless(|| flusher.is_finished()),
        "the update released none of the memtable's memory before its end"
    );
    let m = db.metrics();
    let during = m.user.real_dirty;
    assert!(
        during < held,
        "part of the memtable released during the update: {during} of {held}"
    );
    assert!(
        during > held - memtable,
        "not all of it: {during} of {held}, the memtable {memtable}"
    );
    assert!(m.tables[0].memtables >= 2, "the update is not done");
    released.release();
    flusher.join().unwrap().unwrap();
    db.set_test_hook(None);
    let m = db.metrics();
    assert_eq!(m.tables[0].memtables, 1);
    assert!(m.user.real_dirty < held - memtable / 2, "{m:?}");
    let cache = m.tables[0].cache.clone().unwrap();
    assert_eq!(cache.update_failures, 0, "{cache:?}");
    for i in (0..PARTITIONS).step_by(7) {
        let want = write(i);
        let got = db.get("t", want.key(), ClusteringRange::full()).unwrap();
        assert_eq!(got.as_ref(), Some(&want), "partition {i}");
    }
    db.close().unwrap();
}
