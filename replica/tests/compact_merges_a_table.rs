//! `Database::compact`: a major compaction merges all of a table's
//! sstables into one, reads are unchanged, the merged sstable verifies;
//! unknown tables and a closed database are errors.

use mutation::{
    Cell, ClusteringRange, DecoratedKey, Mutation, PartitionRange, Timestamp, to_mutations,
};
use replica::compaction::StrategyConfig;
use replica::{CommitLogMode, Database, DatabaseConfig, Error, TableSchema};

fn write(key: u32, ts: i64) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(format!("k{key:03}")).unwrap())
        .cell(
            "c",
            0,
            Cell::live(format!("v{ts}"), Timestamp::from_micros(ts)),
        )
        .build()
        .unwrap()
}

#[test]
fn a_major_compaction_leaves_one_sstable_and_the_same_reads() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = DatabaseConfig::new(dir.path());
    config.commitlog = CommitLogMode::Off;
    // No background compaction: only the major one runs.
    config.compaction.strategy = StrategyConfig::None;
    let db = Database::open(config.clone()).unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    for round in 1..=5 {
        for key in 0..50 {
            db.apply("t", &write(key, round)).unwrap();
        }
        db.flush("t").unwrap();
    }
    assert_eq!(db.metrics().sstables(), 5);
    let before = to_mutations(&mut db.scan("t", PartitionRange::full()).unwrap()).unwrap();
    db.compact("t").unwrap();
    let m = db.metrics();
    assert_eq!(m.sstables(), 1, "{:?}", m.tables);
    assert_eq!(m.tables[0].compaction.jobs_completed, 1);
    assert_eq!(m.tables[0].compaction.sstables_compacted, 5);
    assert!(m.compaction.bytes_read > 0 && m.compaction.bytes_written > 0);
    let after = to_mutations(&mut db.scan("t", PartitionRange::full()).unwrap()).unwrap();
    assert_eq!(before, after);
    assert_eq!(
        db.get("t", write(7, 5).key(), ClusteringRange::full())
            .unwrap(),
        Some(write(7, 5))
    );
    assert!(matches!(
        db.compact("nope"),
        Err(Error::UnknownTable { .. })
    ));
    db.close().unwrap();
    assert!(matches!(db.compact("t"), Err(Error::Closed { .. })));
    drop(db);
    // The inputs are gone from the disk, the output verifies.
    let listed = sstable::SstableDirectory::open(dir.path().join("t")).unwrap();
    assert_eq!(listed.generations().len(), 1);
    for &g in listed.generations() {
        sstable::Sstable::open(dir.path().join("t"), g)
            .unwrap()
            .verify()
            .unwrap();
    }
    let db = Database::open(config).unwrap();
    let reopened = to_mutations(&mut db.scan("t", PartitionRange::full()).unwrap()).unwrap();
    assert_eq!(before, reopened);
    db.close().unwrap();
}
