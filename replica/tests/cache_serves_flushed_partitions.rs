//! A flushed memtable's partitions enter the row cache (where the cache
//! knows the ring, or holds the partition already) and later reads are
//! served from it: hits counted, no read of the sstables, the data equal
//! to what was written.

use mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, PartitionRange, Timestamp};
use replica::{CacheSize, Database, DatabaseConfig, TableSchema};

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
fn flushed_partitions_are_served_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), CacheSize::Auto);
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    // A scan of the empty table shows the cache the whole ring: from now
    // on it knows every partition, so a flush inserts them all.
    assert_eq!(
        mutation::to_mutations(&mut db.scan("t", PartitionRange::full()).unwrap())
            .unwrap()
            .len(),
        0
    );
    for i in 0..100 {
        db.apply("t", &partition(i, 1)).unwrap();
    }
    db.flush("t").unwrap();
    let before = db.metrics();
    let cache = before.tables[0]
        .cache
        .clone()
        .expect("the table has a cache");
    assert_eq!(cache.updated_partitions, 100, "{cache:?}");
    assert_eq!(
        cache.adopted_partitions, 100,
        "adopted where they lay, by a region merge: {cache:?}"
    );
    assert_eq!(cache.partitions, 100, "{cache:?}");
    assert!(
        cache.bytes > 0 && cache.region_bytes >= cache.bytes,
        "{cache:?}"
    );
    assert_eq!(before.tables[0].memtables, 1, "the flushed memtable left");
    assert_eq!(before.tables[0].sstables, 1);

    for i in 0..100 {
        let key = DecoratedKey::from_bytes(format!("pk{i:04}")).unwrap();
        let got = db.get("t", &key, ClusteringRange::full()).unwrap();
        assert_eq!(got, Some(partition(i, 1)));
    }
    // An absent key inside the known ring is a hit too (no reader at all).
    let absent = DecoratedKey::from_bytes("nope").unwrap();
    assert_eq!(db.get("t", &absent, ClusteringRange::full()).unwrap(), None);
    let after = db.metrics().tables[0].cache.clone().unwrap();
    assert_eq!(after.misses, cache.misses, "no read went to the sstables");
    assert_eq!(after.hits - cache.hits, 101, "{after:?}");
    assert!(after.hit_ratio() > 0.9, "{after:?}");

    // A second flush merges newer data into the cached partitions.
    for i in 0..10 {
        db.apply("t", &partition(i, 2)).unwrap();
    }
    db.flush("t").unwrap();
    for i in 0..10 {
        let key = DecoratedKey::from_bytes(format!("pk{i:04}")).unwrap();
        let got = db.get("t", &key, ClusteringRange::full()).unwrap();
        assert_eq!(got, Some(partition(i, 2)), "the newer write wins");
    }
    let merged = db.metrics().tables[0].cache.clone().unwrap();
    assert_eq!(merged.misses, cache.misses, "still no read of the sstables");
    assert_eq!(merged.updated_partitions, 110);
    let summed = db.metrics().cache;
    assert_eq!(summed.hits, merged.hits, "the database sums its one table");

    // Dropping the table gives the cache's memory back.
    let used = db.metrics().pool_used;
    db.drop_table("t").unwrap();
    let freed = used - db.metrics().pool_used;
    // The footprint counts the region's own bookkeeping beside its
    // segments: at least its whole segments came back.
    let segments = merged.region_bytes / (128 << 10) * (128 << 10);
    assert!(
        freed > 0 && freed as u64 >= segments,
        "dropping the table freed {freed} bytes of the pool, the cache held {}",
        merged.region_bytes
    );
    db.close().unwrap();
}

#[test]
fn a_new_tables_cache_takes_every_flush_and_never_misses() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), CacheSize::Bytes(4 << 20));
    // No scan first: a new table has no sstables, so its cache starts
    // knowing the whole ring.
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    let absent = DecoratedKey::from_bytes("pk0001").unwrap();
    assert_eq!(db.get("t", &absent, ClusteringRange::full()).unwrap(), None);
    db.apply("t", &partition(7, 1)).unwrap();
    db.flush("t").unwrap();
    let key = DecoratedKey::from_bytes("pk0007").unwrap();
    for _ in 0..3 {
        let got = db.get("t", &key, ClusteringRange::full()).unwrap();
        assert_eq!(got, Some(partition(7, 1)));
    }
    assert_eq!(db.get("t", &absent, ClusteringRange::full()).unwrap(), None);
    let c = db.metrics().tables[0].cache.clone().unwrap();
    assert_eq!((c.misses, c.hits, c.partitions), (0, 5, 1), "{c:?}");
    db.close().unwrap();
}

#[test]
fn a_read_populates_the_cache_and_the_next_one_hits() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), CacheSize::Bytes(4 << 20));
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    db.apply("t", &partition(7, 1)).unwrap();
    db.flush("t").unwrap();
    db.close().unwrap();
    drop(db);
    // Reopened with the partition in an sstable: the cache knows nothing.
    let db = open(dir.path(), CacheSize::Bytes(4 << 20));
    let key = DecoratedKey::from_bytes("pk0007").unwrap();
    for _ in 0..3 {
        let got = db.get("t", &key, ClusteringRange::full()).unwrap();
        assert_eq!(got, Some(partition(7, 1)));
    }
    let c = db.metrics().tables[0].cache.clone().unwrap();
    assert_eq!((c.misses, c.hits, c.populations), (1, 2, 1), "{c:?}");
    db.close().unwrap();
}
