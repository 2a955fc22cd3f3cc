//! Reclaim calls an evictable region's callback until enough is freed or it
//! reports nothing left; then allocation fails cleanly.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use logalloc::{Eviction, Handle, PoolConfig, Region, SegmentPool};

#[test]
fn eviction_callback_frees_in_callers_order() {
    let pool = SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(4096)
            .with_memory_limit(10 * 4096)
            .with_emergency_reserve(1),
    )
    .unwrap();
    let mut cache = Region::new(&pool);
    let lru: Arc<Mutex<VecDeque<Handle>>> = Arc::default();
    while let Ok(h) = cache.alloc_bytes(&[1; 300]) {
        lru.lock().unwrap().push_back(h);
    }
    let cached = lru.lock().unwrap().len();
    let calls = Arc::new(Mutex::new(0));
    let (lru_in_fn, calls_in_fn) = (lru.clone(), calls.clone());
    cache.set_eviction_fn(move |evictor| {
        *calls_in_fn.lock().unwrap() += 1;
        let mut lru = lru_in_fn.lock().unwrap();
        for _ in 0..5 {
            let Some(h) = lru.pop_front() else {
                return Eviction::Nothing;
            };
            assert_eq!(evictor.get(h).unwrap().len(), 300);
            evictor.free(h).unwrap();
        }
        Eviction::Evicted
    });

    let mut writer = Region::new(&pool);
    let h = writer.alloc_bytes(&[2; 300]).unwrap();
    assert_eq!(&*writer.get(h).unwrap(), &[2; 300][..]);
    assert!(*calls.lock().unwrap() >= 1);
    let evicted = cached - lru.lock().unwrap().len();
    assert!(evicted >= 5);
    assert_eq!(cache.stats().bytes_evicted, evicted as u64 * 300);
    assert_eq!(pool.stats().bytes_evicted, evicted as u64 * 300);
    // The survivors are the most recently inserted, untouched.
    for h in lru.lock().unwrap().iter() {
        assert_eq!(&*cache.get(*h).unwrap(), &[1; 300][..]);
    }

    // Keep allocating: eventually the callback has nothing left and the
    // writer owns (almost) the whole pool; then allocation fails cleanly.
    let mut written = vec![h];
    loop {
        match writer.alloc_bytes(&[3; 300]) {
            Ok(h) => written.push(h),
            Err(e) => {
                assert!(e.is_out_of_memory(), "{e}");
                break;
            }
        }
    }
    assert!(lru.lock().unwrap().is_empty());
    assert_eq!(cache.stats().objects, 0);
    assert_eq!(cache.stats().segments, 0);
    assert_eq!(writer.stats().objects, written.len());
    writer.check_invariants().unwrap();
    pool.check_invariants().unwrap();
}

#[test]
fn a_region_can_evict_from_itself() {
    let pool = SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(4096)
            .with_memory_limit(6 * 4096)
            .with_emergency_reserve(1),
    )
    .unwrap();
    let mut region = Region::new(&pool);
    let lru: Arc<Mutex<VecDeque<Handle>>> = Arc::default();
    let lru_in_fn = lru.clone();
    region.set_eviction_fn(move |evictor| match lru_in_fn.lock().unwrap().pop_front() {
        Some(h) => {
            evictor.free(h).unwrap();
            Eviction::Evicted
        }
        None => Eviction::Nothing,
    });
    // Far more than fits: the oldest objects are evicted to make room.
    for i in 0..1000u32 {
        let h = region.alloc_bytes(&[i as u8; 200]).unwrap();
        lru.lock().unwrap().push_back(h);
    }
    let stats = region.stats();
    assert!(stats.bytes_evicted > 0);
    assert!(stats.total_bytes <= 6 * 4096);
    let newest = *lru.lock().unwrap().back().unwrap();
    assert_eq!(&*region.get(newest).unwrap(), &[(999u32 as u8); 200][..]);
    region.check_invariants().unwrap();
}
