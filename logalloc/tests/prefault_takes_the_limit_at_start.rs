//! `PoolConfig::prefault`: the pool takes (and touches) its whole limit
//! when it is made, and allocates as a lazy pool does afterwards, taking
//! nothing more from the system.

use logalloc::{PoolConfig, Region, SegmentPool};

#[test]
fn a_prefaulted_pool_holds_its_limit_from_the_start_and_allocates_as_usual() {
    let limit = 8 << 20;
    let lazy = SegmentPool::new(PoolConfig::default().with_memory_limit(limit)).unwrap();
    let eager = SegmentPool::new(
        PoolConfig::default()
            .with_memory_limit(limit)
            .with_prefault(true),
    )
    .unwrap();
    assert_eq!(lazy.stats().system_bytes, 0);
    assert_eq!(eager.stats().system_bytes, eager.memory_limit());
    for pool in [&lazy, &eager] {
        let mut region = Region::new(pool);
        let handles: Vec<_> = (0..2000u32)
            .map(|i| region.alloc_bytes(&i.to_le_bytes().repeat(500)).unwrap())
            .collect();
        for (i, h) in handles.iter().enumerate() {
            let want = (i as u32).to_le_bytes().repeat(500);
            assert_eq!(&*region.get(*h).unwrap(), &want[..]);
        }
    }
    // The eager pool took nothing more; the lazy one only what it used.
    assert_eq!(eager.stats().system_bytes, eager.memory_limit());
    assert!(lazy.stats().system_bytes <= lazy.memory_limit());
}
