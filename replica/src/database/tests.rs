//! Tests that need the crate's test hooks (the injected flush failure).

use mutation::{Cell, FragmentReader, Timestamp};

use super::*;

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
