//! A flush carries what its region's owner attached to the region, so the
//! target gets the memtable (and its table) back from the flush itself,
//! with no registry of its own: for a flush the policy picked and for an
//! explicit one; nothing once the region left the group.

mod common;

use std::sync::Arc;

use common::QueueTarget;
use dirty_memory::{DirtyMemoryConfig, DirtyMemoryManager, LoopMode};
use logalloc::{PoolConfig, SegmentPool};
use region_group::SizeTrackedRegion;

const SEGMENT: usize = 64 << 10;

/// What the owner attaches: here the memtable's name.
#[derive(Debug, PartialEq)]
struct Memtable(&'static str);

#[test]
fn the_target_gets_the_owner_back_from_the_flush() {
    let pool = SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(SEGMENT)
            .with_memory_limit(64 * SEGMENT),
    )
    .expect("valid pool config");
    let target = QueueTarget::new();
    let mut config = DirtyMemoryConfig::new("owners", 16 * SEGMENT);
    config.loop_mode = LoopMode::Manual;
    let m = DirtyMemoryManager::new(config, target.clone()).unwrap();
    let mut big = SizeTrackedRegion::new(m.group(), &pool);
    let small = SizeTrackedRegion::new(m.group(), &pool);
    assert!(
        m.group()
            .set_region_owner(big.id(), Arc::new(Memtable("big")))
    );
    assert!(
        m.group()
            .set_region_owner(small.id(), Arc::new(Memtable("small")))
    );
    // Past the soft limit (a quarter of the budget): the policy picks `big`.
    while m.group().unspooled_usage() <= m.limits().unspooled_soft {
        big.alloc(4096, 8).unwrap();
    }
    assert_eq!(m.poll_flushes().unwrap(), 1);
    let flush = target.next();
    assert_eq!(flush.owner::<Memtable>().as_deref(), Some(&Memtable("big")));
    assert_eq!(flush.owner::<String>(), None, "another type is not there");
    big.ground_evictable_occupancy();
    flush.finish();

    let completion = m.request_flush(small.id()).unwrap();
    m.poll_flushes().unwrap();
    let flush = target.next();
    assert_eq!(
        flush.owner::<Memtable>().as_deref(),
        Some(&Memtable("small"))
    );
    // The memtable leaves the group before its flush asks: nothing.
    drop(small);
    assert_eq!(flush.owner::<Memtable>(), None);
    flush.finish();
    completion.wait().unwrap();
}
