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

#[test]
fn a_pool_prefaulting_part_of_its_limit_takes_the_rest_as_needed() {
    let limit = 16 << 20;
    // 4 MiB chunks (32 segments of 128 KiB): 5 MiB rounds up to two.
    let pool = SegmentPool::new(
        PoolConfig::default()
            .with_memory_limit(limit)
            .with_prefault(true)
            .with_prefault_bytes(Some(5 << 20)),
    )
    .unwrap();
    assert_eq!(pool.stats().system_bytes, 8 << 20);
    let mut region = Region::new(&pool);
    let handles: Vec<_> = (0..12_000u32)
        .map(|i| region.alloc_bytes(&i.to_le_bytes().repeat(250)).unwrap())
        .collect();
    // About 12 MiB live: past the prefaulted part, taken lazily.
    assert!(pool.stats().system_bytes > 8 << 20);
    assert!(pool.stats().system_bytes <= pool.memory_limit());
    for (i, h) in handles.iter().enumerate() {
        assert_eq!(
            &*region.get(*h).unwrap(),
            &(i as u32).to_le_bytes().repeat(250)[..]
        );
    }
    // Without prefault the bytes are ignored.
    let lazy = SegmentPool::new(
        PoolConfig::default()
            .with_memory_limit(limit)
            .with_prefault_bytes(Some(5 << 20)),
    )
    .unwrap();
    assert_eq!(lazy.stats().system_bytes, 0);
}
