//! Tests that need the crate's test hooks (the injected flush failure).

use std::time::Duration;

use mutation::{Cell, FragmentReader, Timestamp, to_mutations};

use super::*;
use crate::config::CommitLogMode;

fn row(key: &str, ck: u32, value: &str, ts: i64) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(key.to_owned()).unwrap())
        .cell(
            format!("ck{ck:04}"),
            0,
            Cell::live(value.to_owned(), Timestamp::from_micros(ts)),
        )
        .build()
        .unwrap()
}

fn count_rows(db: &Database, table: &str) -> usize {
    let mut reader = db.scan(table, PartitionRange::full()).unwrap();
    let mut rows = 0;
    while let Some(f) = reader.next().unwrap() {
        if matches!(f, mutation::Fragment::ClusteringRow { .. }) {
            rows += 1;
        }
    }
    rows
}

#[test]
fn a_failed_sstable_write_is_retried_and_nothing_is_lost_or_duplicated() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(DatabaseConfig::new(dir.path())).unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    for i in 0..200 {
        db.apply("t", &row(&format!("k{}", i % 20), i, "value", 1))
            .unwrap();
    }
    db.fail_next_flushes(1);
    // The explicit flush sees the first attempt fail...
    let e = db.flush("t").unwrap_err().to_string();
    assert!(e.contains("flush of table \"t\" failed"), "{e}");
    // ... the memtable is kept, sealed, and still readable ...
    assert_eq!(count_rows(&db, "t"), 200);
    let m = db.metrics();
    assert_eq!((m.tables[0].memtables, m.tables[0].sstables), (2, 0));
    assert_eq!(m.user.flushes_failed, 1);
    // ... and the retry (started at once by this request) commits it.
    db.flush("t").unwrap();
    let m = db.metrics();
    assert_eq!((m.tables[0].memtables, m.tables[0].sstables), (1, 1));
    assert!(m.user.flush_retries >= 1, "{:?}", m.user);
    assert_eq!(count_rows(&db, "t"), 200, "nothing lost, nothing twice");
    // The failed write left no file behind: one sstable on disk.
    let listed = sstable::SstableDirectory::open(dir.path().join("t")).unwrap();
    assert_eq!(listed.generations().len(), 1);
    db.close().unwrap();
    drop(db);
    let db = Database::open(DatabaseConfig::new(dir.path())).unwrap();
    assert_eq!(count_rows(&db, "t"), 200);
    db.close().unwrap();
}

fn logged_config(dir: &std::path::Path, mode: CommitLogMode) -> DatabaseConfig {
    let mut config = DatabaseConfig::new(dir);
    config.commitlog = mode;
    config
}

fn keys_of(db: &Database, table: &str) -> Vec<String> {
    let mut reader = db.scan(table, PartitionRange::full()).unwrap();
    to_mutations(&mut reader)
        .unwrap()
        .iter()
        .map(|m| String::from_utf8(m.key().key().as_bytes().to_vec()).unwrap())
        .collect()
}

#[test]
fn after_a_crash_the_commit_log_brings_back_every_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let config = logged_config(dir.path(), CommitLogMode::Batch(Duration::ZERO));
    let db = Database::open(config.clone()).unwrap();
    for t in ["a", "b"] {
        db.create_table(TableSchema::new(t).unwrap()).unwrap();
    }
    for i in 0..100 {
        db.apply("a", &row(&format!("a{i:03}"), 1, "v", 1)).unwrap();
        db.apply("b", &row(&format!("b{i:03}"), 1, "v", 1)).unwrap();
        if i == 50 {
            // Half of "a" is in an sstable: the log may retire it.
            db.flush("a").unwrap();
        }
    }
    let before = (keys_of(&db, "a"), keys_of(&db, "b"));
    assert_eq!((before.0.len(), before.1.len()), (100, 100));
    let stats = db.metrics().commitlog.unwrap();
    assert!(stats.entries >= 200 && stats.syncs > 0, "{stats:?}");
    db.crash();

    let db = Database::open(config.clone()).unwrap();
    let report = db.replay_report().unwrap();
    assert!(report.entries >= 149, "{report:?}");
    assert_eq!(report.corrupt_segments, 0);
    assert_eq!((keys_of(&db, "a"), keys_of(&db, "b")), before);
    // Replayed data was flushed at open, so a second crash loses nothing
    // either, and replays nothing twice into a table.
    db.crash();
    let db = Database::open(config).unwrap();
    assert_eq!((keys_of(&db, "a"), keys_of(&db, "b")), before);
    db.close().unwrap();
}

#[test]
fn a_dropped_table_is_not_resurrected_by_replay() {
    let dir = tempfile::tempdir().unwrap();
    let config = logged_config(dir.path(), CommitLogMode::Batch(Duration::ZERO));
    let db = Database::open(config.clone()).unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    db.apply("t", &row("old", 1, "v", 1)).unwrap();
    db.drop_table("t").unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    db.apply("t", &row("new", 1, "v", 2)).unwrap();
    db.crash();
    let db = Database::open(config).unwrap();
    assert_eq!(keys_of(&db, "t"), ["new"]);
    db.close().unwrap();
}

#[test]
fn without_a_commit_log_a_crash_loses_what_was_not_flushed() {
    let dir = tempfile::tempdir().unwrap();
    let config = logged_config(dir.path(), CommitLogMode::Off);
    let db = Database::open(config.clone()).unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    db.apply("t", &row("flushed", 1, "v", 1)).unwrap();
    db.flush("t").unwrap();
    db.apply("t", &row("lost", 1, "v", 1)).unwrap();
    assert!(db.metrics().commitlog.is_none());
    db.crash();
    let db = Database::open(config).unwrap();
    assert!(db.replay_report().is_none());
    assert_eq!(keys_of(&db, "t"), ["flushed"]);
    db.close().unwrap();
}

#[test]
fn at_its_size_limit_the_commit_log_has_tables_flushed_and_writes_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = logged_config(dir.path(), CommitLogMode::Periodic(Duration::from_secs(10)));
    // No pressure flush below the 16 MiB soft limit...
    config.dirty_memory_budget = 64 << 20;
    // ... but the log holds only 4 MiB.
    config.commitlog_segment_size = 1 << 20;
    config.commitlog_size_limit = 4 << 20;
    let db = Database::open(config).unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    let value = "x".repeat(4 << 10);
    for i in 0..2500 {
        db.apply("t", &row(&format!("k{i:05}"), 1, &value, 1))
            .unwrap();
    }
    let m = db.metrics();
    let log = m.commitlog.unwrap();
    assert!(log.flush_requests > 0, "{log:?}");
    assert!(m.tables[0].flushes > 0, "{:?}", m.tables[0]);
    assert!(log.segments_retired > 0, "{log:?}");
    assert_eq!(keys_of(&db, "t").len(), 2500);
    db.close().unwrap();
}

#[test]
fn every_write_is_timed_in_each_phase() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(logged_config(
        dir.path(),
        CommitLogMode::Batch(Duration::ZERO),
    ))
    .unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    assert_eq!(db.write_phases(), WritePhases::default());
    for i in 0..20 {
        db.apply("t", &row(&format!("k{i}"), 1, "v", 1)).unwrap();
    }
    let p = db.write_phases();
    // Every batch-mode append waited for an fdatasync: never zero.
    assert!(p.log_append.max > Duration::ZERO, "{p:?}");
    assert!(p.log_append.total >= p.log_append.max, "{p:?}");
    assert!(p.memtable_apply.max > Duration::ZERO, "{p:?}");
    assert!(p.admission.total >= p.admission.max, "{p:?}");
    // The database's figures are its tables' summed.
    let tables = db.metrics().tables;
    assert_eq!(tables.len(), 1);
    assert_eq!(tables[0].write_phases, p);
    db.close().unwrap();
}
