//! A listener that panics in the middle of a compaction (when the compaction
//! opens its second destination segment, after some objects have moved)
//! unwinds out of the region with the lock released but the bookkeeping
//! half-done. The region must stay memory-safe: every live handle still
//! reads its own bytes, frees and further allocations never hand out bytes
//! that a live object uses, and dropping everything returns all memory
//! (checked under valgrind memcheck like `valgrind_smoke.rs`).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use logalloc::{Handle, PoolConfig, Region, RegionId, RegionListener, SegmentPool};

/// Panics on the `n`th `increase_usage` after being armed (0: disarmed).
#[derive(Default)]
struct Tripwire {
    countdown: AtomicUsize,
}

impl RegionListener for Tripwire {
    fn add(&self, _: RegionId, _: usize) {}
    fn del(&self, _: RegionId, _: usize) {}
    fn increase_usage(&self, _: RegionId, _: usize) {
        if self.countdown.load(Ordering::Relaxed) > 0
            && self.countdown.fetch_sub(1, Ordering::Relaxed) == 1
        {
            panic!("listener trips");
        }
    }
    fn decrease_usage(&self, _: RegionId, _: usize) {}
    fn merged(&self, _: RegionId, _: RegionId, _: usize) {}
    fn ground_evictable(&self, _: RegionId) {}
}

fn verify(region: &Region, live: &[(Handle, u8)]) {
    for &(h, fill) in live {
        let bytes = region.get(h).unwrap();
        assert_eq!(bytes.len(), 300);
        assert!(bytes.iter().all(|&b| b == fill), "object {fill} damaged");
    }
}

#[test]
fn a_listener_panic_mid_compaction_loses_and_corrupts_nothing() {
    let pool = SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(4096)
            .with_memory_limit(32 * 4096)
            .with_bulk_segments(4),
    )
    .unwrap();
    let tripwire = Arc::new(Tripwire::default());
    let mut region = Region::new(&pool);
    region.listen(tripwire.clone());
    // 13 objects of 300 bytes per segment; keep 2 of 3 over 6 segments, so
    // the survivors of about three sources fill one destination.
    let mut live = Vec::new();
    for i in 0..78u8 {
        let h = region.alloc_bytes(&[i; 300]).unwrap();
        if i % 3 == 0 {
            region.free(h).unwrap();
        } else {
            live.push((h, i));
        }
    }
    tripwire.countdown.store(2, Ordering::Relaxed);
    let tripped = catch_unwind(AssertUnwindSafe(|| region.full_compaction()));
    assert!(tripped.is_err(), "the listener panicked mid-compaction");
    assert!(
        region.stats().bytes_compacted > 0,
        "a whole source segment had moved before the panic"
    );
    verify(&region, &live);

    // Keep using the region: allocations must not land on live objects.
    let mut fresh = Vec::new();
    for i in 100..160u8 {
        fresh.push((region.alloc_bytes(&[i; 300]).unwrap(), i));
    }
    verify(&region, &live);
    verify(&region, &fresh);
    // Free the new objects and half the old ones; a later step may panic on
    // the broken bookkeeping, but never touches a live object's bytes.
    let (freed, kept): (Vec<_>, Vec<_>) = live.iter().partition(|(_, fill)| fill % 2 == 0);
    for &(h, _) in fresh.iter().chain(&freed) {
        let _ = catch_unwind(AssertUnwindSafe(|| region.free(h)));
    }
    verify(&region, &kept);
    for i in 0..30u8 {
        let h = region.alloc_bytes(&[i; 300]).unwrap();
        assert!(region.get(h).unwrap().iter().all(|&b| b == i));
    }
    verify(&region, &kept);
    drop(region);
    let stats = pool.stats();
    assert_eq!(
        stats.segments_in_use, 0,
        "dropping the region returns everything"
    );
}
