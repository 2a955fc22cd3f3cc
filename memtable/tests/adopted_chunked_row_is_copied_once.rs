//! A whole read of a handed-over partition copies a chunked row's bytes
//! once, straight from its chunks into the buffer its fragments share:
//! copied out whole first, a 100 KiB row cost two copies (and two large
//! allocations) per cache hit, and `replica-stress read` of 128 KiB rows
//! served from adopted partitions ran at 0.78-0.81x the op rate of the
//! cache's own copies.

mod common;

use logalloc::Region;
use mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, Timestamp};

#[global_allocator]
static GLOBAL: test_support::CountingAllocator = test_support::CountingAllocator;

#[test]
fn a_chunked_row_is_copied_once_a_read() {
    let (pool, _group, memtable) = common::setup(64 << 20);
    let row = Mutation::builder(DecoratedKey::from_bytes("big").unwrap())
        .cell(
            "r",
            0,
            Cell::live(vec![7u8; 100 << 10], Timestamp::from_micros(1)),
        )
        .build()
        .unwrap();
    memtable.apply(&row).unwrap();
    memtable.seal();
    let mut cache = Region::new(&pool);
    let parts = memtable
        .hand_over(&pool, |handed| {
            let (region, parts) = handed.into_parts();
            cache.merge(region).unwrap();
            parts
        })
        .unwrap()
        .expect("sealed, no reader open");
    let view = cache.reader();
    let read = || parts[0].read(&view, &ClusteringRange::full()).unwrap();
    assert_eq!(read(), row);
    let before = test_support::live_bytes();
    let (m, allocations) = test_support::allocations_in(read);
    // What the read holds is one buffer of the row's bytes (and small
    // decoded parts); the count pins the single copy: a second buffer of
    // the whole row was one more allocation.
    let held = test_support::live_bytes() - before;
    assert!(held < (100 << 10) + 4096, "{held} bytes held by one read");
    assert_eq!(m, row);
    assert!(
        allocations <= ALLOCATIONS,
        "{allocations} allocations a read"
    );
    println!("{allocations} allocations a read");
}

/// Allocations of one whole read of the partition (after the fix; before
/// it, one more: the row copied out of its chunks on its own).
const ALLOCATIONS: u64 = 8;
