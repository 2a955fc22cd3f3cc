//! With 4 KiB segments the index fanout is 14, so a few thousand rows build
//! a tree several levels deep; range tombstones then empty whole leaves,
//! which leave their parents, until the tree collapses. Reads match a model
//! throughout, and the region holds nothing but the remaining entries'
//! keys, values and nodes.

use std::ops::Bound;

use logalloc::{PoolConfig, SegmentPool};
use memtable::Memtable;
use mutation::{
    Cell, ClusteringRange, DecoratedKey, Mutation, PartitionRange, Timestamp, Tombstone,
    to_mutations,
};
use rand::SeedableRng;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use region_group::{ReclaimConfig, RegionGroup};

fn scan(mt: &std::sync::Arc<Memtable>) -> Vec<Mutation> {
    let mut r = mt
        .make_reader(PartitionRange::full(), ClusteringRange::full())
        .unwrap();
    to_mutations(&mut r).unwrap()
}

#[test]
fn deep_tree_grows_and_collapses() {
    let pool = SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(4 << 10)
            .with_memory_limit(32 << 20),
    )
    .unwrap();
    let group = RegionGroup::new("g", ReclaimConfig::default());
    let mt = Memtable::new(&group, &pool).unwrap();
    let key = DecoratedKey::from_bytes("wide").unwrap();
    let mut order: Vec<u32> = (0..3000).collect();
    order.shuffle(&mut SmallRng::seed_from_u64(1));
    let mut model = Mutation::new(key.clone());
    for (n, i) in order.iter().enumerate() {
        let m = Mutation::builder(key.clone())
            .cell(
                format!("{i:05}"),
                0,
                Cell::live(format!("v{i}"), Timestamp::from_micros(1)),
            )
            .build()
            .unwrap();
        mt.apply(&m).unwrap();
        model.apply(m).unwrap();
        if n % 500 == 0 {
            mt.full_compaction().unwrap();
        }
    }
    // Some other partitions around it.
    for p in 0..200 {
        let m = Mutation::builder(DecoratedKey::from_bytes(format!("p{p}")).unwrap())
            .cell("c", 1, Cell::live("x", Timestamp::from_micros(1)))
            .build()
            .unwrap();
        mt.apply(&m).unwrap();
    }
    let scanned = scan(&mt);
    assert_eq!(scanned.len(), 201);
    assert_eq!(scanned.iter().find(|m| m.key() == &key), Some(&model));
    assert_eq!(mt.stats().rows, 3200);
    let used_full = mt.stats().region.used_bytes;

    // Delete in random chunks of 100 keys.
    let mut chunks: Vec<u32> = (0..30).collect();
    chunks.shuffle(&mut SmallRng::seed_from_u64(2));
    for (n, c) in chunks.iter().enumerate() {
        let range = ClusteringRange::new(
            Bound::Included(mutation::ClusteringKey::new(format!("{:05}", c * 100)).unwrap()),
            Bound::Excluded(mutation::ClusteringKey::new(format!("{:05}", c * 100 + 100)).unwrap()),
        )
        .unwrap();
        let m = Mutation::builder(key.clone())
            .range_tombstone(range, Tombstone::new(Timestamp::from_micros(2), 0))
            .build()
            .unwrap();
        mt.apply(&m).unwrap();
        model.apply(m).unwrap();
        if n % 7 == 0 {
            let scanned = scan(&mt);
            assert_eq!(scanned.iter().find(|m| m.key() == &key), Some(&model));
        }
        mt.check_invariants().unwrap();
    }
    let scanned = scan(&mt);
    assert_eq!(scanned.iter().find(|m| m.key() == &key), Some(&model));
    assert!(model.rows().is_empty());
    let stats = mt.stats();
    assert_eq!(stats.rows, 200);
    assert_eq!(stats.rows_dropped_by_tombstones, 3000);
    assert!(stats.region.used_bytes < used_full / 5, "{stats:?}");
}
