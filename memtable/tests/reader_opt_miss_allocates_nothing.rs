//! `make_reader_opt` decides a miss without touching the heap: a
//! single-partition miss and a range scan over an empty range each return
//! `None` with zero allocations (counted by a global allocator), while a
//! hit builds a reader.

use std::ops::Bound;

use memtable::Memtable;
use mutation::{
    Cell, ClusteringRange, DecoratedKey, Mutation, PartitionRange, RingPosition, Timestamp, Token,
};

mod common;

#[global_allocator]
static GLOBAL: test_support::CountingAllocator = test_support::CountingAllocator;

fn allocations_in<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let (out, n) = test_support::allocations_in(f);
    (out, usize::try_from(n).expect("fits"))
}

#[test]
fn misses_allocate_nothing() {
    let (_pool, _group, mt): (_, _, std::sync::Arc<Memtable>) = common::setup(16 << 20);
    let mut keys: Vec<DecoratedKey> = (0..500)
        .map(|i| DecoratedKey::from_bytes(format!("k{i}")).unwrap())
        .collect();
    keys.sort();
    for (i, k) in keys.iter().enumerate() {
        if i % 2 == 0 {
            let m = Mutation::builder(k.clone())
                .cell("c", 0, Cell::live("v", Timestamp::from_micros(1)))
                .build()
                .unwrap();
            mt.apply(&m).unwrap();
        }
    }
    // Ranges and slices are built by the caller, before counting.
    let miss = PartitionRange::single_key(keys[1].clone());
    let hit = PartitionRange::single_key(keys[2].clone());
    // Strictly between two adjacent stored keys: holds nothing.
    let empty = PartitionRange::new(
        Bound::Excluded(RingPosition::Key(keys[2].clone())),
        Bound::Excluded(RingPosition::Key(keys[4].clone())),
    )
    .unwrap();
    let slice = ClusteringRange::full();
    let (r, n) = allocations_in(|| mt.make_reader_opt(miss, slice).unwrap());
    assert!(r.is_none());
    assert_eq!(n, 0, "a single-partition miss allocated");
    let (r, n) = allocations_in(|| mt.make_reader_opt(empty, ClusteringRange::full()).unwrap());
    assert!(r.is_none());
    assert_eq!(n, 0, "an empty range scan allocated");
    let token_gap = PartitionRange::new(
        Bound::Excluded(RingPosition::Token(keys[2].token())),
        Bound::Excluded(RingPosition::Token(Token::from_i64(
            keys[3].token().value(),
        ))),
    )
    .unwrap();
    let (r, n) = allocations_in(|| {
        mt.make_reader_opt(token_gap, ClusteringRange::full())
            .unwrap()
    });
    assert!(r.is_none());
    assert_eq!(n, 0);
    let (r, _) = allocations_in(|| mt.make_reader_opt(hit, ClusteringRange::full()).unwrap());
    let mut r = r.expect("a hit");
    assert_eq!(common::read_all(&mut r).len(), 1);
}
