//! Several caches in one tracker (one per table, as the replica makes
//! them) share its budget and its LRU list: filled beyond the budget
//! together, they never hold more than it; what goes is the least recently
//! used partitions of any cache, so the table read least recently loses
//! its partitions first and the table read last keeps all of its. Each
//! cache's figures are its own and add up to the tracker's, and a dropped
//! cache's partitions leave the tracker.

mod common;

use std::sync::Arc;

use mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, PartitionRange, Timestamp};
use row_cache::{CacheConfig, CacheStats, CacheTracker, RowCache};

use common::MemorySource;

const TABLES: usize = 3;
const PARTITIONS: usize = 60;

/// About 2 KB encoded: 60 of them are about 120 KB.
fn partition(table: usize, i: usize) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(format!("t{table}k{i:03}")).unwrap())
        .cell(
            "r",
            0,
            Cell::live(vec![table as u8; 2000], Timestamp::from_micros(1)),
        )
        .build()
        .unwrap()
}

fn read_table(tracker: &CacheTracker, cache: &RowCache, table: usize, budget: usize) {
    for i in 0..PARTITIONS {
        let m = partition(table, i);
        let one = PartitionRange::single_key(m.key().clone());
        assert_eq!(common::read(cache, one, ClusteringRange::full()), [m]);
        let total = tracker.stats();
        assert!(
            total.stored_bytes <= budget,
            "the caches hold {} bytes together, over the {budget}-byte share",
            total.stored_bytes
        );
    }
}

fn all_stats(caches: &[RowCache]) -> Vec<CacheStats> {
    caches.iter().map(RowCache::stats).collect()
}

#[test]
fn the_share_bounds_the_sum_and_the_coldest_table_goes_first() {
    let pool = common::pool(16 << 20);
    // Two tables' partitions fit (about 240 KB), three do not.
    let budget = 256 << 10;
    let tracker = CacheTracker::new(&pool, Some(budget)).unwrap();
    let sources: Vec<Arc<MemorySource>> =
        (0..TABLES).map(|_| Arc::new(MemorySource::new())).collect();
    let mut caches: Vec<RowCache> = sources
        .iter()
        .map(|s| RowCache::with_tracker(&tracker, s.clone(), CacheConfig::default()).unwrap())
        .collect();
    for (t, source) in sources.iter().enumerate() {
        for i in 0..PARTITIONS {
            source.apply(&partition(t, i));
        }
    }
    assert_eq!(tracker.stats().caches, TABLES);

    // Tables 0, 1, 2 in turn: table 2's partitions push the sum over the
    // share, and table 0's, the least recently used, make room.
    for (t, cache) in caches.iter().enumerate() {
        read_table(&tracker, cache, t, budget);
    }
    let s = all_stats(&caches);
    assert!(s[0].evictions > 0, "{s:?}");
    assert_eq!((s[1].evictions, s[1].partitions), (0, PARTITIONS), "{s:?}");
    assert_eq!((s[2].evictions, s[2].partitions), (0, PARTITIONS), "{s:?}");
    assert!(s[0].partitions < PARTITIONS, "{s:?}");

    // Table 0 again: now table 1 is the least recently used, and it gives
    // the memory; table 2 (read after table 1) keeps everything.
    read_table(&tracker, &caches[0], 0, budget);
    let s = all_stats(&caches);
    assert!(s[1].evictions > 0, "{s:?}");
    assert_eq!((s[2].evictions, s[2].partitions), (0, PARTITIONS), "{s:?}");
    assert_eq!(s[0].partitions, PARTITIONS, "{s:?}");

    // The figures are each cache's own and add up to the tracker's.
    let total = tracker.stats();
    assert_eq!(
        s.iter().map(|s| s.partitions).sum::<usize>(),
        total.partitions
    );
    assert_eq!(
        s.iter().map(|s| s.stored_bytes).sum::<usize>(),
        total.stored_bytes
    );
    assert_eq!(s.iter().map(|s| s.evictions).sum::<u64>(), total.evictions);
    assert_eq!(total.max_bytes, Some(budget));
    // One region for all of them.
    assert!(caches.iter().all(|c| c.region_id() == tracker.region_id()));
    tracker.check_invariants().unwrap();

    // A dropped cache's partitions leave the tracker; the others stay.
    let gone = caches.remove(0).stats();
    let after = tracker.stats();
    assert_eq!(after.caches, TABLES - 1);
    assert_eq!(after.partitions, total.partitions - gone.partitions);
    assert_eq!(after.stored_bytes, total.stored_bytes - gone.stored_bytes);
    tracker.check_invariants().unwrap();
    let readers = sources[2].readers();
    read_table(&tracker, &caches[1], 2, budget);
    assert_eq!(
        sources[2].readers(),
        readers,
        "table 2 was not served from the cache"
    );
}

#[test]
fn the_tracker_evicts_in_lru_order_across_caches() {
    let pool = common::pool(16 << 20);
    let tracker = CacheTracker::new(&pool, None).unwrap();
    let sources: Vec<Arc<MemorySource>> = (0..2).map(|_| Arc::new(MemorySource::new())).collect();
    let caches: Vec<RowCache> = sources
        .iter()
        .map(|s| RowCache::with_tracker(&tracker, s.clone(), CacheConfig::default()).unwrap())
        .collect();
    // The same key in both tables, with different data: the caches are
    // apart.
    let key = DecoratedKey::from_bytes("shared").unwrap();
    let ms: Vec<Mutation> = (0..2)
        .map(|t| {
            Mutation::builder(key.clone())
                .cell(
                    "r",
                    0,
                    Cell::live(vec![t as u8; 10], Timestamp::from_micros(1)),
                )
                .build()
                .unwrap()
        })
        .collect();
    for (source, m) in sources.iter().zip(&ms) {
        source.apply(m);
    }
    let one = PartitionRange::single_key(key.clone());
    for (cache, m) in caches.iter().zip(&ms) {
        assert_eq!(
            common::read(cache, one.clone(), ClusteringRange::full()),
            std::slice::from_ref(m)
        );
    }
    // Table 1 read again: table 0's entry is the oldest and goes first.
    common::read(&caches[1], one.clone(), ClusteringRange::full());
    assert_eq!(tracker.evict(1), 1);
    assert_eq!(
        (caches[0].stats().partitions, caches[1].stats().partitions),
        (0, 1)
    );
    assert_eq!(
        (caches[0].stats().evictions, caches[1].stats().evictions),
        (1, 0)
    );
    // A cache's own `evict` takes only its own entries.
    assert_eq!(caches[0].evict(1), 0);
    assert_eq!(caches[1].evict(1), 1);
    assert_eq!(tracker.stats().partitions, 0);
    for (cache, m) in caches.iter().zip(&ms) {
        assert_eq!(
            common::read(cache, one.clone(), ClusteringRange::full()),
            std::slice::from_ref(m)
        );
    }
    tracker.check_invariants().unwrap();
}
