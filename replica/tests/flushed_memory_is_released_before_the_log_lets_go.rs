//! A flush's end releases the memtable's memory before the commit log
//! lets go of the memtable's entries: letting go may remove many segment
//! files (20-40 ms each where the file system discards freed blocks at
//! once), and writers held at the dirty-memory hard limit should not wait
//! for that. Paused (with the test hooks) between the two: the memory is
//! no longer accounted as dirty, the log still holds every entry (its
//! segments all on disk), and the flush is not reported finished; once
//! released, the log retires the flushed segments.

mod pause;

use std::sync::Arc;
use std::thread;

use mutation::{Cell, DecoratedKey, Mutation, Timestamp};
use replica::{CacheSize, CommitLogMode, Database, DatabaseConfig, HookPoint, TableSchema};

fn write(i: u32) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(format!("pk{i:04}")).unwrap())
        .cell(
            "c",
            0,
            Cell::live(vec![i as u8; 4096], Timestamp::from_micros(1)),
        )
        .build()
        .unwrap()
}

#[test]
fn memory_is_released_before_the_log_lets_go_of_the_flushed_entries() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = DatabaseConfig::new(dir.path());
    config.commitlog = CommitLogMode::Batch(std::time::Duration::ZERO);
    config.commitlog_segment_size = 1 << 20;
    let db = Arc::new(Database::open(config).unwrap());
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    // About 2 MiB of entries: several 1 MiB segments, the active one aside.
    for i in 0..500 {
        db.apply("t", &write(i)).unwrap();
    }
    let before = db.metrics();
    let log = before.commitlog.unwrap();
    assert!(log.segments_on_disk >= 3, "{log:?}");
    assert!(before.tables[0].real_dirty > 0);

    let pause = pause::at(&db, HookPoint::FlushBeforeLogDiscard);
    let flusher = {
        let db = Arc::clone(&db);
        thread::spawn(move || db.flush("t"))
    };
    pause.wait_reached();
    let during = db.metrics();
    assert_eq!(during.user.real_dirty, 0, "the memory is released");
    let during_log = during.commitlog.unwrap();
    assert_eq!(
        during_log.segments_retired, log.segments_retired,
        "the log has not let go yet: {during_log:?}"
    );
    assert!(!flusher.is_finished(), "the flush is not reported finished");
    pause.release();
    flusher.join().unwrap().unwrap();
    db.set_test_hook(None);
    let after = db.metrics().commitlog.unwrap();
    assert!(
        after.segments_retired > log.segments_retired,
        "the flushed segments are retired: {after:?}"
    );
    db.close().unwrap();
}

/// The flushed memtable's segments go back to the pool at the same point,
/// before the log's work, not only once the flush is reported finished:
/// held through it, they let the pool grow by a memtable beyond the budget
/// (issue 19's memory shape: 268-280 MiB of pool for a 256 MiB budget).
/// Without a cache, so the pool holds nothing but memtables.
#[test]
fn the_flushed_memtable_returns_its_segments_before_the_log_lets_go() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = DatabaseConfig::new(dir.path());
    config.commitlog = CommitLogMode::Batch(std::time::Duration::ZERO);
    config.cache_size = CacheSize::Off;
    let db = Arc::new(Database::open(config).unwrap());
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    for i in 0..500 {
        db.apply("t", &write(i)).unwrap();
    }
    let before = db.metrics().pool_used;
    assert!(before >= 2 << 20, "about 2 MiB of memtable: {before}");

    let pause = pause::at(&db, HookPoint::FlushBeforeLogDiscard);
    let flusher = {
        let db = Arc::clone(&db);
        thread::spawn(move || db.flush("t"))
    };
    pause.wait_reached();
    let during = db.metrics().pool_used;
    assert!(
        during < before / 4,
        "the memtable's segments are back in the pool: {during} of {before} bytes still used"
    );
    pause.release();
    flusher.join().unwrap().unwrap();
    db.set_test_hook(None);
    db.close().unwrap();
}
