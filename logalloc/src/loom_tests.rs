//! Loom models of what is shared across threads: the pool's segment list
//! and emergency reserve, and reclaim running from two regions at once.
//!
//! Run with `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p
//! logalloc --release -- loom_`.

use loom::thread;

use std::collections::HashMap;

use crate::pool::Purpose;
use crate::sync::{Arc, Mutex, PlainArc};
use crate::{Error, PoolConfig, Region, RegionId, RegionListener, SegmentPool};

/// A listener that keeps each region's reported footprint, behind the
/// facade's mutex (a loom mutex in these models).
#[derive(Debug)]
struct Ledger(Mutex<HashMap<RegionId, usize>>);

impl Ledger {
    fn new() -> Ledger {
        Ledger(Mutex::new(HashMap::new()))
    }
}

impl RegionListener for Ledger {
    fn add(&self, region: RegionId, total: usize) {
        assert!(self.0.lock().insert(region, total).is_none());
    }
    fn del(&self, region: RegionId, total: usize) {
        assert_eq!(self.0.lock().remove(&region), Some(total));
    }
    fn increase_usage(&self, region: RegionId, delta: usize) {
        *self.0.lock().get_mut(&region).expect("listening") += delta;
    }
    fn decrease_usage(&self, region: RegionId, delta: usize) {
        let mut totals = self.0.lock();
        let total = totals.get_mut(&region).expect("listening");
        *total = total.checked_sub(delta).expect("never below zero");
    }
    fn merged(&self, into: RegionId, from: RegionId, moved: usize) {
        let mut totals = self.0.lock();
        assert_eq!(totals.remove(&from), Some(moved));
        *totals.get_mut(&into).expect("listening") += moved;
    }
    fn ground_evictable(&self, _region: RegionId) {}
}

fn builder() -> loom::model::Builder {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(2);
    }
    builder.max_branches = 100_000;
    builder
}

fn pool(segments: usize, reserve: usize) -> PlainArc<SegmentPool> {
    SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(4096)
            .with_memory_limit(segments * 4096)
            .with_emergency_reserve(reserve)
            .with_bulk_segments(1),
    )
    .unwrap()
}

/// Allocates 30 objects of 400 bytes (three full 4 KiB segments), then
/// frees the even ones: two closed segments at 50%, worth compacting.
fn fill_three_segments_half_free(region: &mut Region) -> Vec<(crate::Handle, u8)> {
    let all: Vec<_> = (0..30u8)
        .map(|i| (region.alloc_bytes(&[i; 400]).unwrap(), i))
        .collect();
    let mut kept = Vec::new();
    for (h, i) in all {
        if i % 2 == 0 {
            region.free(h).unwrap();
        } else {
            kept.push((h, i));
        }
    }
    kept
}

#[test]
fn loom_pool_take_release_keeps_limit_and_reserve() {
    builder().check(|| {
        // Two segments, one of them reserved for compaction.
        let pool = pool(2, 1);
        let allocator = {
            let pool = pool.clone();
            thread::spawn(move || {
                let segment = pool.take(Purpose::Allocation);
                if let Some(segment) = segment {
                    assert!(pool.stats().segments_in_use <= 2);
                    pool.release(segment);
                }
            })
        };
        let compactor = {
            let pool = pool.clone();
            thread::spawn(move || {
                let first = pool.take(Purpose::Compaction);
                let second = pool.take(Purpose::Compaction);
                assert!(first.is_some(), "compaction may always use the reserve");
                assert_ne!(first, second);
                assert!(pool.stats().segments_in_use <= 2);
                let taken = [first, second].into_iter().flatten().count();
                for segment in [first, second].into_iter().flatten() {
                    pool.release(segment);
                }
                taken
            })
        };
        allocator.join().unwrap();
        assert!(compactor.join().unwrap() >= 1);
        let stats = pool.stats();
        assert_eq!(stats.segments_in_use, 0);
        assert!(stats.system_bytes <= 2 * 4096);
        pool.check_invariants().unwrap();
    });
}

#[test]
fn loom_two_regions_reclaim_from_each_other() {
    builder().check(|| {
        let pool = pool(5, 1);
        // Both regions report to one listener: reclaim running on one
        // thread reports the other region's segments and slot lists.
        let ledger = PlainArc::new(Ledger::new());
        let mut a = Region::new(&pool);
        a.listen(ledger.clone());
        let kept = fill_three_segments_half_free(&mut a);
        // `b`: one full segment. The pool is now dry but for the reserve.
        let mut b = Region::new(&pool);
        b.listen(ledger.clone());
        let b_handles: Vec<_> = (0..10u8)
            .map(|i| b.alloc_bytes(&[100 + i; 400]).unwrap())
            .collect();

        let ta = thread::spawn(move || {
            let result = a.alloc_bytes(&[200; 400]);
            (a, result)
        });
        let tb = thread::spawn(move || {
            let result = b.alloc_bytes(&[201; 400]);
            (b, result)
        });
        let (a, ra) = ta.join().unwrap();
        let (b, rb) = tb.join().unwrap();
        for result in [&ra, &rb] {
            if let Err(e) = result {
                assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
            }
        }
        assert!(
            ra.is_ok() || rb.is_ok(),
            "reclaim found room for at least one"
        );
        for (h, fill) in kept {
            assert!(a.get(h).unwrap().iter().all(|&x| x == fill));
        }
        for (i, h) in b_handles.into_iter().enumerate() {
            assert!(b.get(h).unwrap().iter().all(|&x| x == 100 + i as u8));
        }
        if let Ok(h) = ra {
            assert!(a.get(h).unwrap().iter().all(|&x| x == 200));
        }
        if let Ok(h) = rb {
            assert!(b.get(h).unwrap().iter().all(|&x| x == 201));
        }
        pool.check_invariants().unwrap();
        // Whatever the interleaving, the listener's totals are the footprints.
        for region in [&a, &b] {
            assert_eq!(
                ledger.0.lock().get(&region.id()).copied(),
                Some(region.stats().footprint_bytes())
            );
        }
        drop((a, b));
        assert!(ledger.0.lock().is_empty());
    });
}

#[test]
fn loom_a_borrowed_region_is_never_compacted_under_its_reader() {
    builder().check(|| {
        let pool = pool(4, 1);
        let mut a = Region::new(&pool);
        let kept = fill_three_segments_half_free(&mut a);
        let a = Arc::new(a);
        let reader = {
            let a = a.clone();
            let (h, fill) = kept[0];
            thread::spawn(move || {
                let bytes = a.get(h).unwrap();
                // Let the other thread reclaim: it must skip the borrowed
                // region, so the borrowed bytes cannot be moved or reused.
                thread::yield_now();
                assert!(bytes.iter().all(|&x| x == fill));
            })
        };
        let mut b = Region::new(&pool);
        let _ = b.alloc_bytes(&[7; 400]);
        reader.join().unwrap();
        for (h, fill) in kept {
            assert!(a.get(h).unwrap().iter().all(|&x| x == fill));
        }
        pool.check_invariants().unwrap();
    });
}

#[test]
fn loom_a_region_dropped_during_reclaim_is_never_compacted_after_retiring() {
    builder().check(|| {
        let pool = pool(5, 1);
        let mut a = Region::new(&pool);
        let _ = fill_three_segments_half_free(&mut a);
        let mut b = Region::new(&pool);
        let b_handles: Vec<_> = (0..10u8)
            .map(|i| b.alloc_bytes(&[100 + i; 400]).unwrap())
            .collect();
        // `b`'s reclaim may find `a` registered, then reach it before, while
        // or after `a` is dropped: a retired region must offer nothing, and
        // none of its segments may be compacted once back in the pool.
        let dropper = thread::spawn(move || drop(a));
        let result = b.alloc_bytes(&[201; 400]);
        dropper.join().unwrap();
        match result {
            Ok(h) => assert!(b.get(h).unwrap().iter().all(|&x| x == 201)),
            Err(e) => assert!(matches!(e, Error::OutOfMemory { .. }), "{e}"),
        }
        for (i, h) in b_handles.into_iter().enumerate() {
            assert!(b.get(h).unwrap().iter().all(|&x| x == 100 + i as u8));
        }
        pool.check_invariants().unwrap();
        assert_eq!(pool.stats().segments_in_use, b.stats().segments);
        assert!(
            b.alloc_bytes(&[202; 400]).is_ok(),
            "`a`'s segments are free"
        );
        pool.check_invariants().unwrap();
    });
}

/// A `RegionReader` holds the region's lock in shared mode for all its
/// gets: another region's reclaim, running meanwhile, skips the region, so
/// every slice the reader handed out (including a chunked string's
/// chunks) keeps its bytes; a `RegionWriter` of the other region allocates
/// (reclaiming if it must) under its one exclusive lock.
#[test]
fn loom_region_reader_pins_its_region_against_reclaim() {
    builder().check(|| {
        let pool = pool(4, 1);
        let mut a = Region::new(&pool);
        let kept = fill_three_segments_half_free(&mut a);
        let a = Arc::new(a);
        let reader = {
            let a = a.clone();
            let kept = kept.clone();
            thread::spawn(move || {
                let view = a.reader();
                let first = view.get(kept[0].0).unwrap();
                let last = view.get(kept[kept.len() - 1].0).unwrap();
                thread::yield_now();
                assert!(first.iter().all(|&x| x == kept[0].1));
                assert!(last.iter().all(|&x| x == kept[kept.len() - 1].1));
            })
        };
        let mut b = Region::new(&pool);
        let result = b.writer().alloc_with(400, 8, |bytes| bytes.fill(7));
        if let Err(e) = &result {
            assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
        }
        reader.join().unwrap();
        for (h, fill) in kept {
            assert!(a.get(h).unwrap().iter().all(|&x| x == fill));
        }
        if let Ok(h) = result {
            assert!(b.get(h).unwrap().iter().all(|&x| x == 7));
        }
        pool.check_invariants().unwrap();
    });
}
