//! An allocation that finds the pool dry compacts other, unborrowed regions;
//! a borrowed region is left alone; when nothing helps the allocation fails
//! with an out-of-memory error and leaves everything intact.

use logalloc::{Error, PoolConfig, Region, SegmentPool};

fn pool(segments: usize) -> std::sync::Arc<SegmentPool> {
    SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(4096)
            .with_memory_limit(segments * 4096)
            .with_emergency_reserve(1)
            .with_bulk_segments(1),
    )
    .unwrap()
}

/// Fills `region` until the pool is dry, then frees every other object.
fn fill_and_thin(region: &mut Region) -> Vec<(logalloc::Handle, u8)> {
    let mut handles = Vec::new();
    let mut i = 0u8;
    while let Ok(h) = region.alloc_bytes(&[i; 100]) {
        handles.push((h, i));
        i = i.wrapping_add(1);
    }
    let mut kept = Vec::new();
    for (n, (h, fill)) in handles.into_iter().enumerate() {
        if n % 2 == 0 {
            region.free(h).unwrap();
        } else {
            kept.push((h, fill));
        }
    }
    kept
}

#[test]
fn a_dry_pool_compacts_another_region() {
    let pool = pool(12);
    let mut sparse = Region::new(&pool);
    let kept = fill_and_thin(&mut sparse);
    let counter = sparse.reclaim_counter();
    let mut hungry = Region::new(&pool);
    let mut allocated = 0;
    while hungry.alloc_bytes(&[7; 100]).is_ok() {
        allocated += 1;
    }
    // Half of `sparse` was free: reclaim handed most of it to `hungry`.
    assert!(
        allocated > 100,
        "only {allocated} allocations after reclaim"
    );
    assert!(sparse.reclaim_counter() > counter);
    assert!(sparse.stats().segments_compacted > 0);
    for (h, fill) in kept {
        assert!(sparse.get(h).unwrap().iter().all(|&b| b == fill));
    }
    sparse.check_invariants().unwrap();
    hungry.check_invariants().unwrap();
    pool.check_invariants().unwrap();
}

#[test]
fn a_borrowed_region_is_not_compacted_and_oom_leaves_everything_intact() {
    let pool = pool(12);
    let mut sparse = Region::new(&pool);
    let kept = fill_and_thin(&mut sparse);
    let mut hungry = Region::new(&pool);
    let before = sparse.stats();
    let borrowed = sparse.get(kept[0].0).unwrap();
    let mut failures = 0;
    let mut mine = Vec::new();
    for i in 0..10_000u32 {
        match hungry.alloc_bytes(&i.to_le_bytes()) {
            Ok(h) => mine.push((h, i)),
            Err(e) => {
                assert!(matches!(e, Error::OutOfMemory { size: 4, .. }), "{e}");
                assert!(e.to_string().contains("out of memory"));
                failures += 1;
                break;
            }
        }
    }
    assert_eq!(failures, 1);
    assert!(borrowed.iter().all(|&b| b == kept[0].1));
    drop(borrowed);
    assert_eq!(
        sparse.stats().reclaim_counter,
        before.reclaim_counter,
        "sparse untouched"
    );
    assert_eq!(hungry.stats().allocation_failures, 1);
    assert_eq!(
        pool.stats().allocation_failures,
        2,
        "one when filling `sparse`, one now"
    );
    for (h, i) in &mine {
        assert_eq!(&*hungry.get(*h).unwrap(), &i.to_le_bytes());
    }
    // Once the borrow ends, reclaim can use the sparse region.
    hungry.alloc_bytes(b"now it fits").unwrap();
    assert!(sparse.reclaim_counter() > before.reclaim_counter);
    pool.check_invariants().unwrap();
}

#[test]
fn reclaim_time_counts_only_allocations_that_found_the_pool_dry() {
    let pool = pool(12);
    let mut sparse = Region::new(&pool);
    let first = sparse.alloc_bytes(&[1; 100]).unwrap();
    sparse.free(first).unwrap();
    // Explicit compaction is the caller's own work, not an allocation stall.
    sparse.compact();
    sparse.full_compaction().unwrap();
    assert_eq!(sparse.stats().reclaim_time, std::time::Duration::ZERO);
    // Filling the pool takes free segments only: no reclaim yet.
    let kept = fill_and_thin(&mut sparse);
    let after_fill = sparse.stats().reclaim_time;
    let mut hungry = Region::new(&pool);
    while hungry.alloc_bytes(&[7; 100]).is_ok() {}
    let hungry_time = hungry.stats().reclaim_time;
    assert!(
        hungry_time > std::time::Duration::ZERO,
        "reclaim took no time"
    );
    // `sparse` was compacted by `hungry`'s reclaim: the stall was hungry's.
    assert_eq!(sparse.stats().reclaim_time, after_fill);
    // The pool sums every region's stalls.
    assert_eq!(pool.stats().reclaim_time, after_fill + hungry_time);
    // A merge keeps the absorbed region's time.
    sparse.merge(hungry).unwrap();
    assert_eq!(sparse.stats().reclaim_time, after_fill + hungry_time);
    for (h, fill) in kept {
        assert!(sparse.get(h).unwrap().iter().all(|&b| b == fill));
    }
    pool.check_invariants().unwrap();
}
