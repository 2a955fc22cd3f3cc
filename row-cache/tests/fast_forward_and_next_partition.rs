//! `next_partition` skips the rest of a partition and `fast_forward_to`
//! moves to a later range, as the `FragmentReader` contract says, whether
//! the partitions come from the cache or from the source.

mod common;

use std::ops::Bound;

use mutation::{
    Cell, ClusteringRange, DecoratedKey, Fragment, FragmentReader, Mutation, PartitionRange,
    RingPosition, Timestamp,
};

fn keys_of(r: &mut dyn FragmentReader) -> Vec<DecoratedKey> {
    let mut out = Vec::new();
    while let Some(f) = r.next().unwrap() {
        if let Fragment::PartitionStart { key, .. } = f {
            out.push(key);
        }
    }
    out
}

#[test]
fn skipping_and_fast_forwarding_work_cold_and_warm() {
    let (_pool, source, cache) = common::setup(8 << 20);
    let mut keys: Vec<DecoratedKey> = (0..10)
        .map(|i| DecoratedKey::from_bytes(format!("k{i}")).unwrap())
        .collect();
    keys.sort();
    for k in &keys {
        let m = Mutation::builder(k.clone())
            .cell("a", 0, Cell::live("1", Timestamp::from_micros(1)))
            .cell("b", 0, Cell::live("2", Timestamp::from_micros(1)))
            .build()
            .unwrap();
        source.apply(&m);
    }
    let later = PartitionRange::new(
        Bound::Included(RingPosition::Key(keys[6].clone())),
        Bound::Unbounded,
    )
    .unwrap();
    for pass in ["cold", "warm"] {
        let mut r = cache.make_reader(PartitionRange::full(), ClusteringRange::full());
        assert!(
            matches!(r.next().unwrap(), Some(Fragment::PartitionStart { key, .. }) if key == keys[0])
        );
        r.next_partition().unwrap();
        assert!(
            matches!(r.next().unwrap(), Some(Fragment::PartitionStart { key, .. }) if key == keys[1]),
            "{pass}"
        );
        r.fast_forward_to(later.clone()).unwrap();
        assert_eq!(keys_of(&mut r), keys[6..].to_vec(), "{pass}");
        // A range behind the cursor yields only what lies after it.
        r.fast_forward_to(PartitionRange::full()).unwrap();
        assert!(keys_of(&mut r).is_empty(), "{pass}");
        // Make everything warm for the second pass.
        common::read(&cache, PartitionRange::full(), ClusteringRange::full());
    }
    cache.check_invariants().unwrap();
}
