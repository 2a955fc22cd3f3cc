//! The cache share bounds all the tables' caches together: three tables
//! read in turn, more than the share together, never hold more than it;
//! the least recently read table's partitions are evicted first and the
//! last one read keeps all of its; every partition still reads back (the
//! evicted ones from the sstables). Each table's figures are its own, the
//! database's total is their sum, and the one region they share is
//! counted once.

use mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, Timestamp};
use replica::{CacheSize, CommitLogMode, Database, DatabaseConfig, MIN_CACHE_SIZE, TableSchema};

const TABLES: [&str; 3] = ["a", "b", "c"];
const PARTITIONS: u32 = 60;

/// About 7 KB encoded: two tables' partitions fit the 1 MiB share, three
/// do not.
fn partition(table: &str, i: u32) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(format!("{table}{i:03}")).unwrap())
        .cell(
            "r",
            0,
            Cell::live(vec![table.as_bytes()[0]; 7000], Timestamp::from_micros(1)),
        )
        .build()
        .unwrap()
}

fn read_table(db: &Database, table: &str) {
    for i in 0..PARTITIONS {
        let want = partition(table, i);
        let got = db.get(table, want.key(), ClusteringRange::full()).unwrap();
        assert_eq!(got.as_ref(), Some(&want), "{table} partition {i}");
        let cache = db.cache_metrics().unwrap();
        assert!(
            cache.bytes as usize <= MIN_CACHE_SIZE,
            "the tables' caches hold {} bytes together, over the {MIN_CACHE_SIZE}-byte share",
            cache.bytes
        );
    }
}

#[test]
fn three_tables_share_one_cache_budget() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = DatabaseConfig::new(dir.path());
    config.commitlog = CommitLogMode::Off;
    config.cache_size = CacheSize::Bytes(MIN_CACHE_SIZE);
    let db = Database::open(config.clone()).unwrap();
    for t in TABLES {
        db.create_table(TableSchema::new(t).unwrap()).unwrap();
        for i in 0..PARTITIONS {
            db.apply(t, &partition(t, i)).unwrap();
        }
    }
    db.flush_all().unwrap();
    // Everything in sstables, and reopened: a table opened with sstables
    // starts with an empty, discontinuous cache (a new table's cache would
    // have taken each flush), so the caches fill from the reads below.
    db.close().unwrap();
    let db = Database::open(config).unwrap();

    let evictions = |db: &Database| -> Vec<u64> {
        db.metrics()
            .tables
            .iter()
            .map(|t| t.cache.as_ref().unwrap().evictions)
            .collect()
    };
    let partitions = |db: &Database| -> Vec<u64> {
        db.metrics()
            .tables
            .iter()
            .map(|t| t.cache.as_ref().unwrap().partitions)
            .collect()
    };
    for t in TABLES {
        read_table(&db, t);
    }
    // Table a, read least recently, made room for table c.
    let e = evictions(&db);
    let p = partitions(&db);
    assert!(e[0] > 0, "evictions {e:?}");
    assert_eq!((e[1], e[2]), (0, 0), "evictions {e:?}");
    assert_eq!((p[1], p[2]), (60, 60), "partitions {p:?}");

    // Table a again: now b is the least recently used, and gives way.
    read_table(&db, "a");
    let e = evictions(&db);
    let p = partitions(&db);
    assert!(e[1] > 0, "evictions {e:?}");
    assert_eq!(e[2], 0, "evictions {e:?}");
    assert_eq!((p[0], p[2]), (60, 60), "partitions {p:?}");
    // b reads back from the sstables.
    read_table(&db, "b");

    let m = db.metrics();
    let per_table: Vec<_> = m.tables.iter().map(|t| t.cache.clone().unwrap()).collect();
    assert_eq!(
        per_table.iter().map(|c| c.bytes).sum::<u64>(),
        m.cache.bytes
    );
    assert_eq!(
        per_table.iter().map(|c| c.evictions).sum::<u64>(),
        m.cache.evictions
    );
    assert!(m.cache.bytes as usize <= MIN_CACHE_SIZE, "{:?}", m.cache);
    // One region for all of them, counted once.
    assert!(
        per_table
            .iter()
            .all(|c| c.region_bytes == m.cache.region_bytes)
    );
    assert!(m.cache.region_bytes > 0);
    db.close().unwrap();
}
