//! The locks one flush takes, on every thread (the flushing caller, the
//! dirty-memory manager, the flush scheduler's workers), counted by the
//! sync facade's lock census with the source line of each: a memtable of
//! small rows flushed to an sstable, with and without the row cache, at
//! two sizes, so that what grows with the memtable shows apart from what
//! a flush pays once.
//!
//! Its own test binary (one test): the census of every thread must not
//! count another test's locks. The database is quiet while it is taken
//! (commit log off, compaction none). Run with `--nocapture` for the
//! lines.
#![cfg(not(loom))]

mod common;

use replica::compaction::StrategyConfig;
use replica::{CacheSize, CommitLogMode, Database, DatabaseConfig, TableSchema};
use sync::census::{self, Census, Scope};

fn census_of_a_flush(rows: u64, cache: bool) -> Census {
    let dir = tempfile::tempdir().unwrap();
    let mut config = DatabaseConfig::new(dir.path());
    config.commitlog = CommitLogMode::Off;
    config.compaction.strategy = StrategyConfig::None;
    if !cache {
        config.cache_size = CacheSize::Off;
    }
    let db = Database::open(config).unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    let t = db.table("t").unwrap();
    for i in 0..rows {
        t.apply(&common::row(i, 1000)).unwrap();
    }
    let ((), census) = census::record(Scope::AllThreads, || t.flush().unwrap());
    drop(t);
    db.close().unwrap();
    census
}

#[test]
fn a_flush_takes_locks_per_step_not_per_row() {
    for cache in [false, true] {
        let small = census_of_a_flush(2_000, cache);
        let large = census_of_a_flush(20_000, cache);
        let per_row = (large.len() as f64 - small.len() as f64) / 18_000.0;
        println!(
            "cache {}: 2,000 rows: {} locks; 20,000 rows: {} locks ({per_row:.3} a row)\n\
             the flush of 20,000 rows:\n{large}\n",
            if cache { "on" } else { "off" },
            small.len(),
            large.len(),
        );
        // Each row costs the memtable reader's step: a shared hold of the
        // sealed memtable's state and one of its region (nobody writes
        // there any more; only readers share them). Nothing else on the
        // flush's way locks per row: the group's accounting is per 64 KiB,
        // and with a cache the update merges the memtable's region into
        // the cache's and takes the cache's lock once per partition (it
        // read the memtable a second time to copy it, 4 locks a row, before
        // the update by merge).
        assert!(per_row <= 2.1, "cache {cache}: {per_row} a row\n{large}");
        let group = large.count_in("region-group/src");
        assert!(
            group <= 200,
            "cache {cache}: {group} region-group locks\n{large}"
        );
    }
}
