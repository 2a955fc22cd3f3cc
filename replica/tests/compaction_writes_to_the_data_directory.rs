//! Compactions run on the data directory; flushes keep using the flush
//! directory: with a separate flush directory, flushed sstables land
//! there, a compaction reads them in place and writes its output into the
//! data directory, and afterwards the flush directory holds no sstable and
//! no compaction file of the table. Reads are unchanged, before and after
//! a reopen, and the output verifies.

use std::path::Path;

use mutation::{
    Cell, ClusteringRange, DecoratedKey, Mutation, PartitionRange, Timestamp, to_mutations,
};
use replica::compaction::{IncrementalOptions, StrategyConfig};
use replica::{CommitLogMode, Database, DatabaseConfig, TableSchema};

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

/// The names of the files in a table directory, but its marker.
fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("sst-") || n.starts_with("compaction-") || n.starts_with("run-"))
        .collect();
    names.sort();
    names
}

fn generations(dir: &Path) -> Vec<u64> {
    sstable::SstableDirectory::open(dir)
        .unwrap()
        .generations()
        .to_vec()
}

fn check(config: StrategyConfig) {
    let base = tempfile::tempdir().unwrap();
    let data = base.path().join("data");
    let flush = base.path().join("flush");
    let mut config_db = DatabaseConfig::new(&data);
    config_db.flush_dirs = vec![flush.clone()];
    config_db.commitlog = CommitLogMode::Off;
    config_db.compaction.strategy = config;
    let db = Database::open(config_db.clone()).unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    for round in 1..=4 {
        for key in 0..60 {
            db.apply("t", &write(key, round)).unwrap();
        }
        db.flush("t").unwrap();
    }
    let (data_t, flush_t) = (data.join("t"), flush.join("t"));
    assert_eq!(
        generations(&flush_t).len(),
        4,
        "flushes go to the flush directory"
    );
    assert!(generations(&data_t).is_empty());
    let before = to_mutations(&mut db.scan("t", PartitionRange::full()).unwrap()).unwrap();
    db.compact("t").unwrap();
    let after = to_mutations(&mut db.scan("t", PartitionRange::full()).unwrap()).unwrap();
    assert_eq!(before, after);
    assert_eq!(
        db.get("t", write(9, 4).key(), ClusteringRange::full())
            .unwrap(),
        Some(write(9, 4))
    );
    let m = db.metrics();
    assert_eq!(m.tables[0].compaction.sstables_compacted, 4);
    db.close().unwrap();
    drop(db);
    // The inputs are gone from the flush directory, with nothing left
    // behind; the output is in the data directory and verifies.
    assert_eq!(files(&flush_t), Vec::<String>::new());
    let out = generations(&data_t);
    assert!(!out.is_empty());
    for g in out {
        sstable::Sstable::open(&data_t, g)
            .unwrap()
            .verify()
            .unwrap();
    }
    assert!(
        files(&data_t).iter().all(|n| !n.starts_with("compaction-")),
        "{:?}",
        files(&data_t)
    );
    // A flush after the compaction takes a generation of its own: the
    // set's generations are unique across both directories.
    let db = Database::open(config_db).unwrap();
    assert_eq!(
        to_mutations(&mut db.scan("t", PartitionRange::full()).unwrap()).unwrap(),
        before
    );
    db.apply("t", &write(1, 5)).unwrap();
    db.flush("t").unwrap();
    let in_flush = generations(&flush_t);
    assert_eq!(in_flush.len(), 1);
    assert!(!generations(&data_t).contains(&in_flush[0]));
    assert_eq!(
        db.get("t", write(1, 5).key(), ClusteringRange::full())
            .unwrap(),
        Some(write(1, 5))
    );
    db.close().unwrap();
}

#[test]
fn a_size_tiered_compaction_moves_flushed_sstables_into_the_data_directory() {
    check(StrategyConfig::None);
}

#[test]
fn an_incremental_compaction_writes_its_run_into_the_data_directory() {
    let mut ics = IncrementalOptions::default();
    // A run of several fragments; no background job (the buckets never
    // fill): only the major compaction runs.
    ics.fragment_size = 4096;
    ics.tiering.min_threshold = 32;
    ics.tiering.max_threshold = 32;
    check(StrategyConfig::IncrementalWith(ics));
}
