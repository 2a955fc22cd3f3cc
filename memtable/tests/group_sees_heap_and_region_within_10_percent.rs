//! The region group's figure for a memtable is the truth: measured with a
//! counting global allocator (every heap byte the memtable keeps) plus the
//! segments its region holds, it is within 10%, for small rows and for
//! large (chunked) rows.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

use logalloc::{PoolConfig, Region, SegmentPool};
use memtable::Memtable;
use mutation::{Cell, DecoratedKey, Mutation, Timestamp};
use region_group::{ReclaimConfig, RegionGroup};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments,
// so `System`'s guarantees hold; the counter has no effect on memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: forwarded with the caller's arguments.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

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
    let heap_before = LIVE.load(Ordering::Relaxed);
    let mt = Memtable::new(&group, &pool).unwrap();
    for m in &mutations {
        mt.apply(m).unwrap();
    }
    let heap = (LIVE.load(Ordering::Relaxed) - heap_before) as usize;
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
