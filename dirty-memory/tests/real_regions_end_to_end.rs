//! End to end with real logalloc regions: memtables are `SizeTrackedRegion`s
//! in a segment pool, joined to the manager's group; their footprint
//! growth drives the default policy, which flushes the largest one each time
//! the soft limit is crossed, and dropping a flushed region frees its memory.

mod common;

use common::QueueTarget;
use dirty_memory::{DirtyMemoryConfig, DirtyMemoryManager, LoopMode};
use logalloc::{PoolConfig, SegmentPool};
use region_group::SizeTrackedRegion;

const SEGMENT: usize = 64 << 10;
const BUDGET: usize = 64 * SEGMENT; // soft 16 segments, hard 32
const WRITE: usize = 1024;

#[test]
fn real_memtables_are_flushed_largest_first_at_the_soft_limit() {
    let pool = SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(SEGMENT)
            .with_memory_limit(256 * SEGMENT),
    )
    .expect("valid pool config");
    let target = QueueTarget::new();
    let mut config = DirtyMemoryConfig::new("e2e", BUDGET);
    config.loop_mode = LoopMode::Manual;
    let m = DirtyMemoryManager::new(config, target.clone()).unwrap();
    let soft = m.limits().unspooled_soft;

    // Three tables; table t receives t+1 writes out of every 6.
    let mut active: Vec<SizeTrackedRegion> = (0..3)
        .map(|_| SizeTrackedRegion::new(m.group(), &pool))
        .collect();
    let pattern = [0, 1, 1, 2, 2, 2];
    let mut flushes = 0;
    for i in 0..12_000 {
        let table = pattern[i % pattern.len()];
        m.run_when_memory_available(
            || active[table].alloc(WRITE, 8).expect("pool has room"),
            None,
        )
        .expect("never held: flushes free memory at once");
        let live: usize = active.iter().map(|r| r.stats().footprint_bytes()).sum();
        assert_eq!(
            m.metrics().real_dirty,
            live,
            "the group counts every segment and every table byte"
        );

        let unspooled = m.group().unspooled_usage();
        let largest = active
            .iter()
            .map(|r| r.stats().footprint_bytes())
            .max()
            .unwrap();
        let started = m.poll_flushes().unwrap();
        assert_eq!(
            started,
            usize::from(unspooled > soft),
            "flush iff above the soft limit"
        );
        if started == 1 {
            let mut flush = target.next();
            let t = active
                .iter()
                .position(|r| r.id() == flush.region())
                .expect("an active memtable");
            assert_eq!(
                active[t].stats().footprint_bytes(),
                largest,
                "the largest memtable"
            );
            // Seal: a fresh memtable takes the table's writes.
            let sealed =
                std::mem::replace(&mut active[t], SizeTrackedRegion::new(m.group(), &pool));
            sealed.ground_evictable_occupancy();
            let size = sealed.stats().footprint_bytes();
            assert_eq!(flush.account_written(usize::MAX), size);
            flush.data_written();
            flush.finish_releasing(|| drop(sealed));
            flushes += 1;
        }
    }
    let mt = m.metrics();
    assert_eq!(mt.flushes_completed, flushes);
    assert!(flushes >= 10, "{flushes} flushes");
    assert!(
        mt.peak_real_dirty <= soft + SEGMENT,
        "peak {} over soft {soft} + a segment",
        mt.peak_real_dirty
    );
    assert_eq!(mt.writers_blocked, 0);
}
