//! A flush whose sstable commits but then cannot be opened (an I/O error
//! on one of its files) fails, and removes that sstable: left on disk, out
//! of the table's set, it came back at the next open, after a compaction
//! had purged the tombstone that shadowed its rows, and a deleted row
//! returned (found by the fault sweep: a failed open during a flush).

use std::sync::Arc;

use fs::{FaultError, FaultFs, FaultRule, FsHandle, Op, RealFs};
use mutation::{
    Cell, ClusteringKey, ClusteringRange, DecoratedKey, Mutation, Timestamp, Tombstone,
};
use replica::{CommitLogMode, Database, DatabaseConfig, TableSchema};

fn config(dir: &std::path::Path, fs: FsHandle) -> DatabaseConfig {
    let mut c = DatabaseConfig::new(dir);
    c.commitlog = CommitLogMode::Off;
    c.fs = fs;
    c
}

fn key() -> DecoratedKey {
    DecoratedKey::from_bytes("k").unwrap()
}

fn live(db: &Database) -> bool {
    db.get("t", &key(), ClusteringRange::full())
        .unwrap()
        .and_then(|m| m.row(&ClusteringKey::new("r").unwrap()).cloned())
        .is_some_and(|row| matches!(row.cells.get(&0), Some(Cell::Live { .. })))
}

#[test]
fn a_deleted_row_stays_deleted_after_a_flush_that_could_not_open_its_sstable() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let disk = FaultFs::new(Arc::new(RealFs));
    let db = Database::open(config(&dir, FsHandle::new(Arc::new(disk.clone())))).unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    let write = Mutation::builder(key())
        .cell("r", 0, Cell::live("v", Timestamp::from_micros(1)))
        .build()
        .unwrap();
    db.apply("t", &write).unwrap();
    // The flush's sstable commits; opening it fails.
    disk.add_rule(FaultRule::every(Op::Open, FaultError::Io).on_paths("-Summary.db"))
        .unwrap();
    db.flush("t").unwrap_err();
    disk.clear_rules();
    // A delete whose deletion time is long past gc_grace: compaction may
    // purge it once nothing it shadows is left in the table.
    let delete = Mutation::builder(key())
        .row_tombstone("r", Tombstone::new(Timestamp::from_micros(2), 1))
        .build()
        .unwrap();
    db.apply("t", &delete).unwrap();
    db.flush("t").unwrap();
    db.compact("t").unwrap();
    assert!(!live(&db));
    db.close().unwrap();
    drop(db);

    let db = Database::open(config(&dir, FsHandle::real())).unwrap();
    assert!(!live(&db), "the deleted row returned");
    db.close().unwrap();
}
