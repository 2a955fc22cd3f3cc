//! End to end with real logalloc regions: a `SizeTrackedRegion` reports its
//! footprint (every segment, and its handle table and slot lists) to its
//! group, which follows allocation, freeing, grounding, merge and drop, and
//! throttles writers that allocate.

use std::sync::{Arc, Mutex};

use logalloc::{PoolConfig, SegmentPool};
use region_group::{ReclaimConfig, RegionGroup, SizeTrackedRegion};

const SEGMENT: usize = 64 << 10;

fn pool() -> Arc<SegmentPool> {
    SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(SEGMENT)
            .with_memory_limit(64 * SEGMENT),
    )
    .expect("valid pool config")
}

/// Allocates objects of 1 KiB until the region holds at least `bytes`.
fn fill(region: &mut SizeTrackedRegion, bytes: usize) -> Vec<logalloc::Handle> {
    let mut handles = Vec::new();
    while region.stats().total_bytes < bytes {
        handles.push(region.alloc(1024, 8).expect("pool has room"));
    }
    handles
}

#[test]
fn group_follows_real_regions() {
    let pool = pool();
    let group = RegionGroup::new("e2e", ReclaimConfig::default());
    let mut a = SizeTrackedRegion::new(&group, &pool);
    let mut b = SizeTrackedRegion::new(&group, &pool);
    assert_eq!(group.region_count(), 2);
    assert_eq!(a.group_name(), "e2e");

    fill(&mut a, 3 * SEGMENT);
    let b_handles = fill(&mut b, SEGMENT);
    let sizes = |r: &SizeTrackedRegion| group.region_size(r.id()).map(|(total, _)| total);
    assert_eq!(sizes(&a), Some(a.stats().footprint_bytes()));
    assert_eq!(sizes(&b), Some(b.stats().footprint_bytes()));
    assert!(a.stats().table_bytes > 0, "the table is counted too");
    assert_eq!(
        group.real_usage(),
        a.stats().footprint_bytes() + b.stats().footprint_bytes()
    );
    assert_eq!(group.largest_region(), Some(a.id()));

    a.ground_evictable_occupancy();
    assert_eq!(group.largest_flushable_region(), Some(b.id()));
    assert_eq!(
        group.region_size(a.id()),
        Some((a.stats().footprint_bytes(), true))
    );

    for h in b_handles {
        b.free(h).unwrap();
    }
    assert_eq!(sizes(&b), Some(b.stats().footprint_bytes()));

    let total_before = group.real_usage();
    let tables_before = a.stats().table_bytes + b.stats().table_bytes;
    let (a_id, b_id) = (a.id(), b.id());
    b.merge(a.into_region()).unwrap();
    assert_eq!(group.region_size(a_id), None);
    assert_eq!(sizes(&b), Some(b.stats().footprint_bytes()));
    // Segments and table parts move as they are; only the tables'
    // bookkeeping vectors change (the absorbed table's are freed, the
    // absorbing table's part list may grow), and the group follows that.
    assert_eq!(
        group.real_usage() as i64 - total_before as i64,
        b.stats().table_bytes as i64 - tables_before as i64,
        "a merge within the group changes its total only by the tables' bookkeeping"
    );
    assert_eq!(group.largest_flushable_region(), Some(b_id));

    drop(b);
    assert_eq!((group.real_usage(), group.region_count()), (0, 0));
    assert_eq!(group.largest_region(), None);
}

#[test]
fn writers_that_allocate_are_throttled_and_released_by_freeing() {
    let pool = pool();
    let group = RegionGroup::new(
        "e2e",
        ReclaimConfig {
            unspooled_hard_limit: 4 * SEGMENT,
            ..Default::default()
        },
    );
    let mut hog = SizeTrackedRegion::new(&group, &pool);
    fill(&mut hog, 5 * SEGMENT);
    assert!(!group.execution_permitted());

    let writes = Arc::new(Mutex::new(SizeTrackedRegion::new(&group, &pool)));
    let writers: Vec<_> = (0..4)
        .map(|_| {
            let (group, writes) = (group.clone(), writes.clone());
            std::thread::spawn(move || {
                group
                    .run_when_memory_available(
                        || {
                            let mut region = writes.lock().unwrap();
                            let h = region.alloc(4096, 8).unwrap();
                            region.free(h).unwrap();
                        },
                        None,
                    )
                    .unwrap();
            })
        })
        .collect();
    // Dropping the hog (a flushed memtable) releases its segments, and the
    // writers.
    drop(hog);
    for w in writers {
        w.join().unwrap();
    }
    assert_eq!(group.queued_requests(), 0);
    assert!(group.execution_permitted());
}
