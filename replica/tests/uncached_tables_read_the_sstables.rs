//! A table created with `TableOptions::uncached`, and every table of a
//! database opened with `CacheSize::Off`, has no row cache: its reads go
//! to the memtables and sstables alone, and the option survives a reopen.

use mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, Timestamp};
use replica::{CacheSize, Database, DatabaseConfig, TableOptions, TableSchema};

fn partition(i: u32, ts: i64) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(format!("pk{i:04}")).unwrap())
        .cell(
            "row",
            0,
            Cell::live(format!("v{i}@{ts}"), Timestamp::from_micros(ts)),
        )
        .build()
        .unwrap()
}

fn open(dir: &std::path::Path, cache: CacheSize) -> Database {
    let mut config = DatabaseConfig::new(dir);
    config.cache_size = cache;
    Database::open(config).unwrap()
}

#[test]
fn without_a_cache_reads_go_to_the_sstables() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), CacheSize::Auto);
    let mut uncached = TableOptions::default();
    uncached.uncached = true;
    db.create_table(TableSchema::with_options("cold", uncached).unwrap())
        .unwrap();
    db.create_table(TableSchema::new("hot").unwrap()).unwrap();
    for t in ["cold", "hot"] {
        db.apply(t, &partition(1, 1)).unwrap();
        db.flush(t).unwrap();
        let key = DecoratedKey::from_bytes("pk0001").unwrap();
        assert_eq!(
            db.get(t, &key, ClusteringRange::full()).unwrap(),
            Some(partition(1, 1))
        );
    }
    let m = db.metrics();
    let by_name = |n: &str| m.tables.iter().find(|t| t.name == n).unwrap();
    assert!(by_name("cold").cache.is_none(), "the table opted out");
    // The new table's cache started continuous and took the flush: the
    // read was a hit.
    let hot = by_name("hot").cache.as_ref().unwrap();
    assert_eq!((hot.hits, hot.misses, hot.partitions), (1, 0, 1), "{hot:?}");
    db.close().unwrap();
    drop(db);

    // The option survives a reopen; a database without caches has none.
    let db = open(dir.path(), CacheSize::Off);
    let key = DecoratedKey::from_bytes("pk0001").unwrap();
    for t in ["cold", "hot"] {
        assert_eq!(
            db.get(t, &key, ClusteringRange::full()).unwrap(),
            Some(partition(1, 1))
        );
    }
    let m = db.metrics();
    assert!(m.tables.iter().all(|t| t.cache.is_none()));
    assert_eq!(m.cache, replica::CacheMetrics::default());
    assert!(db.cache_metrics().is_none());
    let schema = db
        .tables()
        .into_iter()
        .find(|s| s.name() == "cold")
        .unwrap();
    assert!(schema.options().uncached);
    db.close().unwrap();
}
