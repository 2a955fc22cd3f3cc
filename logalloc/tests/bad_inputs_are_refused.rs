//! Bad inputs return errors with clear messages and change nothing.

use logalloc::{Error, PoolConfig, Region, SegmentPool};

#[test]
fn oversized_objects_and_bad_alignments_are_refused() {
    let pool = SegmentPool::new(PoolConfig::default().with_memory_limit(4 << 20)).unwrap();
    let mut region = Region::new(&pool);
    assert_eq!(pool.max_object_size(), 13107);
    region.alloc(13107, 8).unwrap();
    let before = region.stats();
    let err = region.alloc(13108, 1).unwrap_err();
    assert_eq!(
        err,
        Error::ObjectTooLarge {
            size: 13108,
            max: 13107
        }
    );
    assert_eq!(
        err.to_string(),
        "object of 13108 bytes exceeds the 13107-byte maximum object size (10% of a segment); \
         split the value into chunks"
    );
    let err = region.alloc(8, 3).unwrap_err();
    assert_eq!(
        err,
        Error::InvalidAlignment {
            align: 3,
            max: 4096
        }
    );
    assert!(matches!(
        region.alloc(8, 0),
        Err(Error::InvalidAlignment { .. })
    ));
    assert!(matches!(
        region.alloc(8, 8192),
        Err(Error::InvalidAlignment { .. })
    ));
    assert_eq!(region.stats(), before);
}

#[test]
fn stale_and_foreign_handles_are_detected() {
    let pool = SegmentPool::new(PoolConfig::default().with_memory_limit(4 << 20)).unwrap();
    let mut a = Region::new(&pool);
    let mut b = Region::new(&pool);
    let ha = a.alloc_bytes(b"a").unwrap();
    let hb = b.alloc_bytes(b"b").unwrap();
    assert_eq!(a.get(hb).unwrap_err(), Error::ForeignHandle { handle: hb });
    assert_eq!(a.free(hb), Err(Error::ForeignHandle { handle: hb }));
    assert!(a.get_mut(hb).is_err());
    a.free(ha).unwrap();
    assert_eq!(a.free(ha), Err(Error::StaleHandle { handle: ha }));
    assert!(a.get(ha).unwrap_err().to_string().contains("freed"));
    // Reusing the slot does not revive the old handle.
    let again = a.alloc_bytes(b"again").unwrap();
    assert_ne!(again, ha);
    assert!(a.get(ha).is_err());
    assert_eq!(&*b.get(hb).unwrap(), b"b");
}

#[test]
fn invalid_pool_configurations_are_refused() {
    let err = SegmentPool::new(PoolConfig::default().with_segment_size(1000)).unwrap_err();
    assert!(err.to_string().contains("power of two"), "{err}");
    let err = SegmentPool::new(PoolConfig::default().with_memory_limit(1000)).unwrap_err();
    assert!(matches!(err, Error::MemoryLimitTooSmall { .. }), "{err}");
    let err = SegmentPool::new(PoolConfig::default().with_bulk_segments(0)).unwrap_err();
    assert!(
        matches!(err, Error::InvalidBulkSegments { segments: 0 }),
        "{err}"
    );
}

#[test]
fn regions_are_send_and_sync_and_pool_totals_add_up() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Region>();
    assert_send_sync::<SegmentPool>();
    let pool = SegmentPool::new(PoolConfig::default().with_memory_limit(4 << 20)).unwrap();
    let mut a = Region::new(&pool);
    let mut b = Region::new(&pool);
    a.alloc_bytes(&[1; 10]).unwrap();
    b.alloc_bytes(&[2; 20]).unwrap();
    b.alloc_bytes(&[3; 30]).unwrap();
    let totals = pool.region_totals();
    assert_eq!(totals.objects, 3);
    assert_eq!(totals.object_bytes, 60);
    assert_eq!(totals.used_bytes, 60);
    assert_eq!(totals.total_bytes, pool.stats().used_bytes());
    assert_eq!(totals.free_bytes, totals.total_bytes - totals.used_bytes);
    let stats = pool.stats();
    assert_eq!(stats.used_bytes() + stats.free_bytes(), stats.memory_limit);
    assert!(stats.occupancy() > 0.0 && stats.occupancy() < 1.0);
}
