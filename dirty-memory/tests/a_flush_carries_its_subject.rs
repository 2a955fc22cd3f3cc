//! A flush carries what its memtable's region carries (its subject), typed
//! by the manager, so the target gets the memtable (and its table) from the
//! flush itself with no registry of its own and no cast: for a flush the
//! policy picked and for an explicit one; nothing for a region that left
//! the group before its flush started.

mod common;

use std::sync::Arc;

use common::QueueTarget;
use dirty_memory::{DirtyMemoryConfig, DirtyMemoryManager, LoopMode};
use logalloc::{PoolConfig, SegmentPool};
use region_group::SizeTrackedRegion;

const SEGMENT: usize = 64 << 10;

/// What each region carries: here the memtable's name.
#[derive(Debug, PartialEq)]
struct Memtable(&'static str);

#[test]
fn the_target_gets_the_subject_from_the_flush() {
    let pool = SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(SEGMENT)
            .with_memory_limit(64 * SEGMENT),
    )
    .expect("valid pool config");
    let target = QueueTarget::<Memtable>::new();
    let mut config = DirtyMemoryConfig::new("subjects", 16 * SEGMENT);
    config.loop_mode = LoopMode::Manual;
    let m = DirtyMemoryManager::with_subjects(config, target.clone()).unwrap();
    let mut big = SizeTrackedRegion::new(m.group(), &pool);
    let small = SizeTrackedRegion::new(m.group(), &pool);
    let gone = SizeTrackedRegion::new(m.group(), &pool);
    for (region, name) in [(&big, "big"), (&small, "small"), (&gone, "gone")] {
        assert!(
            m.group()
                .set_region_owner(region.id(), Arc::new(Memtable(name)))
        );
    }
    // Past the soft limit (a quarter of the budget): the policy picks `big`.
    while m.group().unspooled_usage() <= m.limits().unspooled_soft {
        big.alloc(4096, 8).unwrap();
    }
    assert_eq!(m.poll_flushes().unwrap(), 1);
    let flush = target.next();
    assert_eq!(flush.region(), big.id());
    assert_eq!(flush.subject().map(|s| s.0), Some("big"));
    big.ground_evictable_occupancy();
    flush.finish();

    let completion = m.request_flush(small.id()).unwrap();
    m.poll_flushes().unwrap();
    let flush = target.next();
    assert_eq!(flush.subject().map(|s| s.0), Some("small"));
    // The flush holds its subject even if the memtable leaves meanwhile.
    drop(small);
    assert_eq!(flush.subject().map(|s| s.0), Some("small"));
    flush.finish();
    completion.wait().unwrap();

    // Requested, then gone before the flush started: nothing to carry.
    let completion = m.request_flush(gone.id()).unwrap();
    drop(gone);
    m.poll_flushes().unwrap();
    let flush = target.next();
    assert!(flush.subject().is_none());
    flush.finish();
    completion.wait().unwrap();
}
