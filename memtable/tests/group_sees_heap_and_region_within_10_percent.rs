//! The region group's figure for a memtable is the truth: measured with a
//! counting global allocator (every heap byte the memtable keeps) plus the
//! segments its region holds, it is within 10%, for small rows and for
//! large (chunked) rows.

use logalloc::{PoolConfig, Region, SegmentPool};
use memtable::Memtable;
use mutation::{Cell, DecoratedKey, Mutation, Timestamp};
use region_group::{ReclaimConfig, RegionGroup};

#[global_allocator]
static GLOBAL: test_support::CountingAllocator = test_support::CountingAllocator;

fn measure(rows: usize, value: usize) {
    let limit = 256 << 20;
    let pool = SegmentPool::new(PoolConfig::default().with_memory_limit(limit)).unwrap();
    // Make the pool take all its segment memory now, so the heap delta
    // below is only what the memtable keeps.
    {
        let mut filler = Region::new(&pool);
        while filler.alloc(pool.max_object_size(), 8).is_ok() {}
    }
    let group = RegionGroup::new("g", ReclaimConfig::default());
    let mutations: Vec<Mutation> = (0..rows)
        .map(|i| {
            Mutation::builder(DecoratedKey::from_bytes(format!("key-{i:08}")).unwrap())
                .cell(
                    "ck",
                    0,
                    Cell::live(vec![i as u8; value], Timestamp::from_micros(1)),
                )
                .build()
                .unwrap()
        })
        .collect();
    let heap_before = test_support::live_bytes();
    let mt = Memtable::new(&group, &pool).unwrap();
    for m in &mutations {
        mt.apply(m).unwrap();
    }
    let heap = (test_support::live_bytes() - heap_before) as usize;
    let stats = mt.stats();
    let real = heap + stats.region.total_bytes;
    let seen = group.real_usage();
    let error = (seen as f64 - real as f64).abs() / real as f64;
    assert!(
        error <= 0.10,
        "{rows} rows of {value} bytes: group sees {seen}, heap {heap} + segments {} = {real} \
         ({:.1}% off)",
        stats.region.total_bytes,
        error * 100.0
    );
    drop(mt);
    assert_eq!(group.real_usage(), 0);
}

#[test]
fn group_figure_matches_heap_plus_segments() {
    measure(20_000, 20);
    measure(200, 100_000);
    measure(1, 10);
}
