//! Issue 32 through the database: a scan that has started a partition in
//! the active memtable while an older version of its rows sits in an
//! sstable (and the row cache) must not show that older version when a
//! partition delete lands before the scan reaches the rows. Before the
//! fix the memtable's reader came back with neither the newer rows (the
//! delete had removed them) nor the delete (in the header it had passed),
//! and the scan returned the partition's previous version: the write
//! acknowledged before the scan began was missing.

use mutation::{
    Cell, DecoratedKey, Fragment, FragmentReader, Mutation, PartitionRange, Timestamp, Tombstone,
};
use replica::{CacheSize, CommitLogMode, Database, DatabaseConfig, TableSchema};

fn key() -> DecoratedKey {
    DecoratedKey::from_bytes("w1-0187").unwrap()
}

fn write(value: &str, t: i64) -> Mutation {
    Mutation::builder(key())
        .cell(
            "r",
            0,
            Cell::live(value.to_owned(), Timestamp::from_micros(t)),
        )
        .build()
        .unwrap()
}

fn scan_across_a_delete(cache: CacheSize) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = DatabaseConfig::new(dir.path());
    config.commitlog = CommitLogMode::Off;
    config.cache_size = cache;
    let db = Database::open(config).unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    db.apply("t", &write("old", 1)).unwrap();
    db.flush("t").unwrap();
    // Acknowledged before the scan begins.
    db.apply("t", &write("new", 3)).unwrap();

    let mut scan = db.scan("t", PartitionRange::full()).unwrap();
    let start = scan.next().unwrap().unwrap();
    assert!(matches!(start, Fragment::PartitionStart { .. }));
    let delete = Mutation::builder(key())
        .partition_tombstone(Tombstone::new(Timestamp::from_micros(4), 0))
        .build()
        .unwrap();
    db.apply("t", &delete).unwrap();
    let mut rest = Vec::new();
    while let Some(f) = scan.next().unwrap() {
        rest.push(f);
    }
    let rows: Vec<_> = rest
        .iter()
        .filter_map(|f| match f {
            Fragment::ClusteringRow { row, .. } => Some(row.clone()),
            _ => None,
        })
        .collect();
    // The scan may show "new" (read before the delete took it) or nothing
    // live (the delete, carried as a range tombstone over what it had not
    // read), never "old" undeleted.
    let deleted = rest.iter().any(|f| {
        matches!(f, Fragment::RangeTombstoneChange { tombstone: Some(t), .. }
            if t.timestamp >= Timestamp::from_micros(3))
    });
    for row in rows {
        for cell in row.cells.values() {
            if let Cell::Live { value, .. } = cell {
                assert!(
                    value.as_ref() != b"old" || deleted,
                    "the scan shows the partition's previous version: {rest:?}"
                );
            }
        }
    }
    drop(scan);
    // And a read after it sees the delete.
    let now = db
        .get("t", &key(), mutation::ClusteringRange::full())
        .unwrap()
        .unwrap();
    assert_eq!(
        now.partition_tombstone().map(|t| t.timestamp),
        Some(Timestamp::from_micros(4))
    );
    db.close().unwrap();
}

#[test]
fn a_scan_does_not_show_the_previous_version_without_a_cache() {
    scan_across_a_delete(CacheSize::Off);
}

#[test]
fn a_scan_does_not_show_the_previous_version_with_a_cache() {
    scan_across_a_delete(CacheSize::Auto);
}
