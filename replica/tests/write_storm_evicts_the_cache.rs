//! A write storm that fills the row caches and the memtables at once: two
//! tables whose caches share the pool's room beyond the dirty budgets (one
//! share for both), both fed by every flush, with more written than the
//! pool holds. The share evicts the least recently used partitions of
//! either table, so the caches together stay within it and leave the
//! dirty budgets' room to the memtables (the pool's reclaim, logalloc's
//! eviction hook, is only the backstop: each table's cache with the whole
//! share, as before, needed it; the row-cache crate's own write-storm test
//! drives that path): no write fails or times out, no allocation fails,
//! pool usage never exceeds its limit, and every partition reads back
//! (evicted ones from the sstables).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, PartitionRange, Timestamp};
use replica::{CacheSize, Database, DatabaseConfig, TableSchema};

const TABLES: [&str; 2] = ["a", "b"];
const WRITERS: u32 = 4;
const PER_WRITER: u32 = 300;
/// Four rows of this many bytes per partition.
const ROW: usize = 16 << 10;

fn partition(w: u32, i: u32) -> Mutation {
    let mut b = Mutation::builder(DecoratedKey::from_bytes(format!("w{w}-{i:04}")).unwrap());
    for r in 0..4u8 {
        b = b.cell(
            format!("r{r}"),
            0,
            Cell::live(vec![r ^ w as u8; ROW], Timestamp::from_micros(1)),
        );
    }
    b.build().unwrap()
}

#[test]
fn a_write_storm_evicts_the_caches_within_the_pool() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = DatabaseConfig::new(dir.path());
    config.dirty_memory_budget = 4 << 20;
    config.cache_size = CacheSize::Auto;
    let (_, share) = config
        .cache_size
        .pool_and_cache(config.dirty_memory_budget + config.system_dirty_memory_budget);
    let share = share.expect("a cache share") as u64;
    // A writer held back by the cache would time out.
    config.write_timeout = Duration::from_secs(20);
    let db = Arc::new(Database::open(config).unwrap());
    for t in TABLES {
        db.create_table(TableSchema::new(t).unwrap()).unwrap();
        // The scan of the empty table makes its whole ring known, so
        // every flush brings its partitions into the cache.
        let mut scan = db.scan(t, PartitionRange::full()).unwrap();
        assert!(mutation::to_mutations(&mut scan).unwrap().is_empty());
    }
    let limit = db.metrics().pool_limit;
    let worst = Arc::new(AtomicUsize::new(0));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (db, worst) = (Arc::clone(&db), Arc::clone(&worst));
            std::thread::spawn(move || {
                for i in 0..PER_WRITER {
                    let table = TABLES[(i % 2) as usize];
                    db.apply(table, &partition(w, i)).unwrap();
                    if i % 8 == 0 {
                        worst.fetch_max(db.metrics().pool_used, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    db.flush_all().unwrap();
    let m = db.metrics();
    let written = (WRITERS * PER_WRITER) as usize * 4 * ROW;
    assert!(
        written > 2 * limit / 2,
        "the storm writes more than the pool holds"
    );
    assert!(
        worst.load(Ordering::Relaxed) <= limit && m.pool_used <= limit,
        "pool usage {} (sampled peak {}) over its limit {limit}",
        m.pool_used,
        worst.load(Ordering::Relaxed)
    );
    assert_eq!(m.pool_allocation_failures, 0, "no allocation failed");
    assert!(m.cache.evictions > 0, "the share evicted: {:?}", m.cache);
    assert!(
        m.cache.bytes <= share,
        "the caches hold {} bytes together, over the {share}-byte share",
        m.cache.bytes
    );
    let per_table: u64 = m
        .tables
        .iter()
        .filter_map(|t| t.cache.as_ref())
        .map(|c| c.evictions)
        .sum();
    assert_eq!(per_table, m.cache.evictions);
    assert!(
        m.tables
            .iter()
            .all(|t| t.cache.as_ref().is_some_and(|c| c.evictions > 0)),
        "both tables' caches gave memory: {:?}",
        m.tables.iter().map(|t| &t.cache).collect::<Vec<_>>()
    );
    assert_eq!(m.cache.update_failures, 0, "{:?}", m.cache);
    assert!(
        m.cache.region_bytes as usize <= limit,
        "the caches stay inside the pool: {:?}",
        m.cache
    );
    assert!(m.user.flushes_completed > 0);

    // Every partition is still there: from the cache or, evicted, from
    // the sstables.
    for w in 0..WRITERS {
        for i in (0..PER_WRITER).step_by(7) {
            let want = partition(w, i);
            let got = db
                .get(
                    TABLES[(i % 2) as usize],
                    want.key(),
                    ClusteringRange::full(),
                )
                .unwrap();
            assert_eq!(got.as_ref(), Some(&want), "partition w{w}-{i}");
        }
    }
    db.close().unwrap();
}
