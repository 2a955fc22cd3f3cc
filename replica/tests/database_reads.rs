//! Readers that stay open across flushes see each row exactly once: they
//! keep the sources they started with, and readers of a flushed memtable
//! continue in its sstable at their next partition.

use std::collections::BTreeMap;

use mutation::{Cell, DecoratedKey, Fragment, FragmentReader, Mutation, PartitionRange, Timestamp};
use replica::{Database, DatabaseConfig, TableReader, TableSchema};

fn write_partitions(db: &Database, range: std::ops::Range<u32>, ts: i64) {
    for i in range {
        let m = Mutation::builder(DecoratedKey::from_bytes(format!("pk{i:04}")).unwrap())
            .cell(
                "a",
                0,
                Cell::live(format!("v{i}"), Timestamp::from_micros(ts)),
            )
            .cell(
                "b",
                0,
                Cell::live(format!("w{i}"), Timestamp::from_micros(ts)),
            )
            .build()
            .unwrap();
        db.apply("t", &m).unwrap();
    }
}

/// Reads `reader` to the end, counting each (partition, row) seen.
fn drain(reader: &mut TableReader, seen: &mut BTreeMap<(String, String), u32>, partitions: usize) {
    let mut key = String::new();
    let mut done = 0;
    while let Some(f) = reader.next().unwrap() {
        match f {
            Fragment::PartitionStart { key: k, .. } => key = k.to_string(),
            Fragment::ClusteringRow { key: ck, .. } => {
                *seen.entry((key.clone(), format!("{ck:?}"))).or_default() += 1;
            }
            Fragment::PartitionEnd => {
                done += 1;
                if done == partitions {
                    return;
                }
            }
            _ => {}
        }
    }
}

#[test]
fn readers_open_across_flushes_see_each_row_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(DatabaseConfig::new(dir.path())).unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    write_partitions(&db, 0..100, 1);
    db.flush("t").unwrap();
    write_partitions(&db, 100..300, 2);

    // One reader is half way through when the memtable is flushed, another
    // has not started reading, a third opens after the flush.
    let mut halfway = db.scan("t", PartitionRange::full()).unwrap();
    let mut unstarted = db.scan("t", PartitionRange::full()).unwrap();
    let mut seen_halfway = BTreeMap::new();
    drain(&mut halfway, &mut seen_halfway, 150);
    db.flush("t").unwrap();
    // Writes after the readers opened may or may not be seen, but never twice.
    write_partitions(&db, 0..10, 3);
    let mut after = db.scan("t", PartitionRange::full()).unwrap();
    drain(&mut halfway, &mut seen_halfway, usize::MAX);
    let mut seen_unstarted = BTreeMap::new();
    drain(&mut unstarted, &mut seen_unstarted, usize::MAX);
    let mut seen_after = BTreeMap::new();
    drain(&mut after, &mut seen_after, usize::MAX);

    assert_eq!(db.metrics().tables[0].sstables, 2, "both flushes committed");
    for (name, seen) in [
        ("halfway", &seen_halfway),
        ("unstarted", &seen_unstarted),
        ("after", &seen_after),
    ] {
        assert_eq!(seen.len(), 600, "{name}: every row of the 300 partitions");
        let twice: Vec<_> = seen.iter().filter(|(_, n)| **n != 1).collect();
        assert!(
            twice.is_empty(),
            "{name}: rows not seen exactly once: {twice:?}"
        );
    }
    db.close().unwrap();
}
