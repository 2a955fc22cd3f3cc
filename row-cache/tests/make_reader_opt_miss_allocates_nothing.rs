//! Where the cache knows a range is empty (continuous, no entry),
//! `make_reader_opt` returns `None` with zero heap allocations (counted by
//! a global allocator) and without opening the source; where it has data
//! it builds a reader.

mod common;

use std::ops::Bound;

use mutation::{
    Cell, ClusteringRange, DecoratedKey, Mutation, PartitionRange, RingPosition, Timestamp,
};

#[global_allocator]
static GLOBAL: test_support::CountingAllocator = test_support::CountingAllocator;

fn allocations_in<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let (out, n) = test_support::allocations_in(f);
    (out, usize::try_from(n).expect("fits"))
}

#[test]
fn misses_in_continuous_ranges_allocate_nothing() {
    let (_pool, source, cache) = common::setup(16 << 20);
    let mut keys: Vec<DecoratedKey> = (0..200)
        .map(|i| DecoratedKey::from_bytes(format!("k{i}")).unwrap())
        .collect();
    keys.sort();
    for (i, k) in keys.iter().enumerate() {
        if i % 2 == 0 {
            let m = Mutation::builder(k.clone())
                .cell("c", 0, Cell::live("v", Timestamp::from_micros(1)))
                .build()
                .unwrap();
            source.apply(&m);
        }
    }
    // Before anything is known, a miss must read the source.
    let unknown = PartitionRange::single_key(keys[1].clone());
    assert!(
        cache
            .make_reader_opt(unknown, ClusteringRange::full())
            .is_some()
    );
    // A full scan makes the whole ring continuous.
    let all = common::read(&cache, PartitionRange::full(), ClusteringRange::full());
    assert_eq!(all.len(), 100);
    let readers = source.readers();

    // Ranges and slices are built by the caller, before counting.
    let miss = PartitionRange::single_key(keys[3].clone());
    let hit = PartitionRange::single_key(keys[4].clone());
    let between = PartitionRange::new(
        Bound::Excluded(RingPosition::Key(keys[4].clone())),
        Bound::Excluded(RingPosition::Key(keys[6].clone())),
    )
    .unwrap();
    let (slice, slice2) = (ClusteringRange::full(), ClusteringRange::full());
    let (r, n) = allocations_in(|| cache.make_reader_opt(miss, slice));
    assert!(r.is_none());
    assert_eq!(n, 0, "a single-partition miss allocated");
    let (r, n) = allocations_in(|| cache.make_reader_opt(between, slice2));
    assert!(r.is_none());
    assert_eq!(n, 0, "an empty range allocated");
    assert_eq!(source.readers(), readers, "a known miss opened the source");

    let mut r = cache
        .make_reader_opt(hit, ClusteringRange::full())
        .expect("a cached partition builds a reader");
    assert_eq!(common::read_all(&mut r).len(), 1);
    assert_eq!(source.readers(), readers, "a hit opened the source");
}
