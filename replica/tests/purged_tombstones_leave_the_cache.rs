//! A tombstone compaction purges leaves the row cache too: the same
//! operations on a database with the cache and on one without read the
//! same at every step, tombstones included. The cached tombstone is gone
//! after the purge, and a late write older than it, flushed after the
//! purge, is live in both (a tombstone kept in the cache would have hidden
//! it there until the entry was evicted).

use std::sync::Arc;
use std::time::Duration;

use mutation::{
    Cell, ClusteringRange, DecoratedKey, Mutation, PartitionRange, Timestamp, Tombstone,
    to_mutations,
};
use replica::compaction::{ManualClock, SizeTieredOptions, StrategyConfig};
use replica::{CacheSize, CommitLogMode, Database, DatabaseConfig, TableSchema};

const NOW: u32 = 1_000_000;

fn open(dir: &std::path::Path, cache: CacheSize) -> Database {
    let mut config = DatabaseConfig::new(dir);
    config.commitlog = CommitLogMode::Off;
    let mut stcs = SizeTieredOptions::default();
    stcs.min_sstable_size = 1;
    config.compaction.strategy = StrategyConfig::SizeTiered(stcs);
    config.compaction.gc_grace = Duration::ZERO;
    config.compaction.clock = Arc::new(ManualClock::new(NOW));
    config.cache_size = cache;
    let db = Database::open(config).unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    db
}

fn key(name: &str) -> DecoratedKey {
    DecoratedKey::from_bytes(name.to_owned()).unwrap()
}

fn cell(k: &str, value: &[u8], ts: i64) -> Mutation {
    Mutation::builder(key(k))
        .cell(
            "r",
            0,
            Cell::live(value.to_vec(), Timestamp::from_micros(ts)),
        )
        .build()
        .unwrap()
}

fn delete_row(k: &str, ts: i64) -> Mutation {
    Mutation::builder(key(k))
        .row_tombstone("r", Tombstone::new(Timestamp::from_micros(ts), NOW - 10))
        .build()
        .unwrap()
}

/// Both databases, one with the row cache and one without.
struct Pair {
    cached: Database,
    uncached: Database,
}

impl Pair {
    fn each(&self, f: impl Fn(&Database)) {
        f(&self.cached);
        f(&self.uncached);
    }

    /// Reads `k` (and the whole table) in both; they agree; returns the
    /// partition.
    fn read(&self, k: &str, what: &str) -> Option<Mutation> {
        let got = self
            .cached
            .get("t", &key(k), ClusteringRange::full())
            .unwrap();
        let want = self
            .uncached
            .get("t", &key(k), ClusteringRange::full())
            .unwrap();
        assert_eq!(got, want, "{what}: the cache answers differently for {k}");
        let scan = |db: &Database| to_mutations(&mut db.scan("t", PartitionRange::full()).unwrap());
        assert_eq!(
            scan(&self.cached).unwrap(),
            scan(&self.uncached).unwrap(),
            "{what}: the scans differ"
        );
        got
    }
}

#[test]
fn reads_with_and_without_the_cache_agree_across_a_purge() {
    let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let pair = Pair {
        cached: open(dirs.0.path(), CacheSize::Auto),
        uncached: open(dirs.1.path(), CacheSize::Off),
    };
    pair.each(|db| {
        db.apply("t", &cell("victim", b"old", 1)).unwrap();
        db.apply("t", &cell("other", b"o", 1)).unwrap();
        db.flush("t").unwrap();
        db.apply("t", &delete_row("victim", 5)).unwrap();
        db.flush("t").unwrap();
    });
    // The deleted row reads as its tombstone; the scans fill the cache
    // (and make its ring continuous, so flushes insert into it).
    let before = pair.read("victim", "before the purge");
    assert!(before.is_some(), "the tombstone is there before the purge");
    let hits = pair.cached.cache_metrics().unwrap().hits;
    pair.read("victim", "from the cache");
    assert!(
        pair.cached.cache_metrics().unwrap().hits > hits,
        "the cached database read from its cache"
    );

    // A major compaction holds the tombstone and the data it shadows:
    // both go.
    pair.each(|db| db.compact("t").unwrap());
    assert_eq!(pair.read("victim", "after the purge"), None);
    assert_eq!(
        pair.read("other", "after the purge"),
        Some(cell("other", b"o", 1))
    );

    // A late write older than the purged tombstone: live in both.
    pair.each(|db| {
        db.apply("t", &cell("victim", b"late", 3)).unwrap();
        db.flush("t").unwrap();
    });
    assert_eq!(
        pair.read("victim", "the late write"),
        Some(cell("victim", b"late", 3))
    );
    pair.read("victim", "the late write, again");
    pair.each(|db| db.close().unwrap());
}
