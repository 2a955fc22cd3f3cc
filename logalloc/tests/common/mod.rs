//! Shared setup of the tests where an allocation must get its memory
//! from a row-cache-like evictable region.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use logalloc::{Eviction, Handle, PoolConfig, Region, SegmentPool};

/// Segment size of [`small_pool`].
pub(crate) const SEGMENT: usize = 4096;
/// Segments of [`small_pool`].
pub(crate) const SEGMENTS: usize = 64;
/// Bytes of each cached object.
pub(crate) const OBJECT: usize = 300;

/// A pool of [`SEGMENTS`] segments of [`SEGMENT`] bytes.
pub(crate) fn small_pool() -> Arc<SegmentPool> {
    SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(SEGMENT)
            .with_memory_limit(SEGMENTS * SEGMENT)
            .with_emergency_reserve(1),
    )
    .unwrap()
}

/// A cache region filling what is left of `pool` with [`OBJECT`]-byte
/// objects, and its LRU list: its eviction callback frees about a
/// segment's worth of the oldest per call, as the row cache does.
pub(crate) fn full_cache(pool: &Arc<SegmentPool>) -> (Region, Arc<Mutex<VecDeque<Handle>>>) {
    let mut cache = Region::new(pool);
    let lru: Arc<Mutex<VecDeque<Handle>>> = Arc::default();
    while let Ok(h) = cache.alloc_bytes(&[1; OBJECT]) {
        lru.lock().unwrap().push_back(h);
    }
    let lru_in_fn = Arc::clone(&lru);
    cache.set_eviction_fn(move |evictor| {
        let mut lru = lru_in_fn.lock().unwrap();
        for _ in 0..SEGMENT / OBJECT {
            let Some(h) = lru.pop_front() else {
                return Eviction::Nothing;
            };
            evictor.free(h).unwrap();
        }
        Eviction::Evicted
    });
    (cache, lru)
}
