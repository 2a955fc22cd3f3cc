//! With a budget of its own, the cache evicts its least recently used
//! partitions beyond it: a partition read again stays, the coldest go.

mod common;

use std::sync::Arc;

use mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, PartitionRange, Timestamp};
use row_cache::{CacheConfig, RowCache};

#[test]
fn the_budget_keeps_the_hot_partitions() {
    let pool = common::pool(16 << 20);
    let source = Arc::new(common::MemorySource::new());
    let ms: Vec<Mutation> = (0..100)
        .map(|i| {
            Mutation::builder(DecoratedKey::from_bytes(format!("k{i:03}")).unwrap())
                .cell(
                    "r",
                    0,
                    Cell::live(vec![1u8; 2000], Timestamp::from_micros(1)),
                )
                .build()
                .unwrap()
        })
        .collect();
    for m in &ms {
        source.apply(m);
    }
    let budget = 64 << 10; // about 30 partitions
    let cache = RowCache::new(
        &pool,
        source.clone(),
        CacheConfig::default().with_max_bytes(budget),
    )
    .unwrap();
    let hot = PartitionRange::single_key(ms[0].key().clone());
    for m in &ms {
        let one = PartitionRange::single_key(m.key().clone());
        assert_eq!(
            common::read(&cache, one, ClusteringRange::full()),
            std::slice::from_ref(m)
        );
        // Keep partition 0 hot.
        assert_eq!(
            common::read(&cache, hot.clone(), ClusteringRange::full()),
            [ms[0].clone()]
        );
        assert!(cache.stats().stored_bytes <= budget);
    }
    let stats = cache.stats();
    assert!(stats.evictions >= 60, "{stats:?}");
    let readers = source.readers();
    common::read(&cache, hot, ClusteringRange::full());
    assert_eq!(source.readers(), readers, "the hot partition was evicted");
    cache.check_invariants().unwrap();
}
