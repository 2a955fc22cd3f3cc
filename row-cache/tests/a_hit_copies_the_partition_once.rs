//! A cache hit copies the partition out of the region once, into one
//! buffer its values slice, and streams the fragments from the decoded
//! partition: a hit of a 5-row partition allocates the buffer, the maps
//! of the decoded partition (one per row) and little else, far fewer
//! allocations than one per key and value (counted by a global allocator).

mod common;

use mutation::{
    Cell, ClusteringKey, ClusteringRange, DecoratedKey, FragmentReader, Mutation, PartitionRange,
    Timestamp,
};

#[global_allocator]
static GLOBAL: test_support::CountingAllocator = test_support::CountingAllocator;

const ROWS: usize = 5;

fn partition(i: usize) -> Mutation {
    let mut b = Mutation::builder(DecoratedKey::from_bytes(format!("pk{i:06}")).unwrap());
    for r in 0..ROWS {
        b = b.cell(
            format!("ck{r:03}"),
            0,
            Cell::live(vec![r as u8; 100], Timestamp::from_micros(1)),
        );
    }
    b.build().unwrap()
}

/// Drains `r`, returning the fragments' count; allocates nothing itself.
fn drain(r: &mut dyn FragmentReader) -> usize {
    let mut n = 0;
    while let Some(f) = r.next().unwrap() {
        std::hint::black_box(&f);
        n += 1;
    }
    n
}

#[test]
fn a_hit_allocates_per_row_not_per_value() {
    let (_pool, source, cache) = common::setup(16 << 20);
    let batch: Vec<Mutation> = (0..50).map(partition).collect();
    for m in &batch {
        source.apply(m);
    }
    // One scan caches everything.
    assert_eq!(
        common::read(&cache, PartitionRange::full(), ClusteringRange::full()).len(),
        50
    );
    let ranges: Vec<PartitionRange> = batch
        .iter()
        .map(|m| PartitionRange::single_key(m.key().clone()))
        .collect();
    let full = ClusteringRange::full();
    let one_row = ClusteringRange::singular(ClusteringKey::new("ck002").unwrap());
    // Once uncounted: the first clone of a key may allocate.
    for r in &ranges {
        drain(&mut cache.make_reader(r.clone(), full.clone()));
        drain(&mut cache.make_reader(r.clone(), one_row.clone()));
    }
    let hits = cache.stats().hits;
    let before = test_support::allocations();
    let mut fragments = 0;
    for r in &ranges {
        fragments += drain(&mut cache.make_reader(r.clone(), full.clone()));
    }
    let whole = (test_support::allocations() - before) as f64 / ranges.len() as f64;
    assert_eq!(fragments, ranges.len() * (ROWS + 2));
    let before = test_support::allocations();
    let mut fragments = 0;
    for r in &ranges {
        fragments += drain(&mut cache.make_reader(r.clone(), one_row.clone()));
    }
    let sliced = (test_support::allocations() - before) as f64 / ranges.len() as f64;
    assert_eq!(fragments, ranges.len() * 3);
    assert_eq!(cache.stats().hits - hits, 2 * ranges.len() as u64);
    // The buffer and its shared header, the rows map, a cell map per row:
    // 2 + 1 + ROWS. Copying each key and value would be 2 * ROWS more.
    let bound = (3 + ROWS) as f64;
    assert!(whole <= bound, "{whole} allocations per whole hit");
    assert!(sliced <= bound, "{sliced} allocations per sliced hit");
}
