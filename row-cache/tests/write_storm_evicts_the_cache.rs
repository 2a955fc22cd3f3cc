//! A write storm into a memtable of the same pool, needing memory the
//! cache holds, succeeds: logalloc's reclaim calls the cache's eviction
//! hook, the cache gives its least recently used partitions back, no
//! allocation fails, and the pool never goes over its limit. Reads after
//! the storm still return the source's data (evicted partitions read
//! through).

mod common;

use mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, PartitionRange, Timestamp};
use region_group::{ReclaimConfig, RegionGroup};

fn partition(prefix: &str, i: usize, value: usize) -> Mutation {
    let mut b = Mutation::builder(DecoratedKey::from_bytes(format!("{prefix}{i:06}")).unwrap());
    for r in 0..4 {
        b = b.cell(
            format!("ck{r}"),
            0,
            Cell::live(vec![i as u8; value], Timestamp::from_micros(1)),
        );
    }
    b.build().unwrap()
}

#[test]
fn a_write_storm_evicts_the_cache_instead_of_failing() {
    const LIMIT: usize = 8 << 20;
    let (pool, source, cache) = common::setup(LIMIT);
    let mut cached: Vec<Mutation> = (0..2500).map(|i| partition("c", i, 500)).collect();
    cached.sort_by(|a, b| a.key().cmp(b.key())); // ring order, as reads return them
    for m in &cached {
        source.apply(m);
    }
    // One scan caches it all: about 5 MB of the 8 MB pool.
    let got = common::read(&cache, PartitionRange::full(), ClusteringRange::full());
    assert_eq!(got, cached);
    let filled = cache.stats();
    assert_eq!(filled.partitions, cached.len());
    assert!(filled.region.total_bytes > LIMIT / 2, "{filled:?}");

    // The storm: more than the free part of the pool.
    let group = RegionGroup::new("memtables", ReclaimConfig::default());
    let memtable = memtable::Memtable::new(&group, &pool).unwrap();
    let mut written = 0;
    let mut i = 0;
    while written < 6 << 20 {
        let m = partition("w", i, 400);
        written += m.encoded_len();
        memtable.apply(&m).expect("the cache's memory is evictable");
        assert!(pool.stats().used_bytes() <= LIMIT);
        i += 1;
    }
    let after = cache.stats();
    assert!(after.evictions > 0, "{after:?}");
    assert!(after.partitions < cached.len());
    assert!(
        after.region.total_bytes + memtable.stats().region.total_bytes <= LIMIT,
        "cache and memtable hold more than the pool"
    );
    assert_eq!(pool.stats().allocation_failures, 0);
    cache.check_invariants().unwrap();

    // Evicted partitions read through; the scan is complete and correct.
    drop(memtable);
    let again = common::read(&cache, PartitionRange::full(), ClusteringRange::full());
    assert_eq!(again, cached);
}
