//! ScyllaDB #1942: flushes that come faster than the cache can absorb
//! them. Each flushed memtable stays in its region group (accounted) until
//! `update_from` returns, and the copy into the cache evicts older cache
//! entries when the pool is dry, so pool usage never exceeds the limit and
//! no update fails; a partition that cannot be stored is invalidated, never
//! answered partially.

mod common;

use mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, PartitionRange, Timestamp};
use region_group::{ReclaimConfig, RegionGroup};

fn partition(i: usize, round: i64) -> Mutation {
    let mut b = Mutation::builder(DecoratedKey::from_bytes(format!("k{i:05}")).unwrap());
    for r in 0..4 {
        b = b.cell(
            format!("ck{r}"),
            0,
            Cell::live(vec![round as u8; 300], Timestamp::from_micros(round)),
        );
    }
    b.build().unwrap()
}

#[test]
fn flushes_faster_than_updates_stay_within_the_pool() {
    const LIMIT: usize = 4 << 20;
    let (pool, source, cache) = common::setup(LIMIT);
    // Make the ring continuous (empty), so every flushed partition is
    // inserted and the cache grows with each flush.
    assert!(common::read(&cache, PartitionRange::full(), ClusteringRange::full()).is_empty());
    let group = RegionGroup::new("memtables", ReclaimConfig::default());
    let mut expected = std::collections::BTreeMap::new();
    for round in 1..=8i64 {
        // Two memtables flushed back to back before either updates the
        // cache: the second flush outran the first update.
        let mut pending = Vec::new();
        for half in 0..2 {
            let memtable = memtable::Memtable::new(&group, &pool).unwrap();
            let batch: Vec<Mutation> = (0..800)
                .map(|i| partition(i + half * 800 + (round as usize % 3) * 100, round))
                .collect();
            for m in &batch {
                memtable.apply(m).unwrap();
                source.apply(m);
                let merged = match expected.remove(m.key()) {
                    Some(old) => Mutation::merge(old, m.clone()).unwrap(),
                    None => m.clone(),
                };
                expected.insert(m.key().clone(), merged);
            }
            memtable.seal();
            pending.push(memtable);
        }
        for memtable in pending {
            let mut flushed = memtable
                .make_reader(PartitionRange::full(), ClusteringRange::full())
                .unwrap();
            cache.update_from(&mut flushed).unwrap();
            // Accounted until here; then detached and dropped.
            memtable.detach_from_region_group();
            assert!(pool.stats().used_bytes() <= LIMIT);
        }
    }
    assert_eq!(pool.stats().allocation_failures, 0);
    let stats = cache.stats();
    assert!(
        stats.evictions > 0 || stats.update_invalidated > 0,
        "{stats:?}"
    );
    cache.check_invariants().unwrap();
    let want: Vec<Mutation> = expected.into_values().collect();
    assert_eq!(
        common::read(&cache, PartitionRange::full(), ClusteringRange::full()),
        want
    );
}
