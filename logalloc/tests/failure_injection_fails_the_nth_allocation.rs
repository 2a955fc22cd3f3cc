//! `fail_nth_allocation(n)` makes exactly the nth allocation fail, once,
//! without touching anything else.

use logalloc::{Error, PoolConfig, Region, SegmentPool};

#[test]
fn the_nth_allocation_fails_once() {
    let pool = SegmentPool::new(PoolConfig::default().with_memory_limit(4 << 20)).unwrap();
    let mut region = Region::new(&pool);
    pool.fail_nth_allocation(3);
    let a = region.alloc_bytes(b"one").unwrap();
    let b = region.alloc(8, 8).unwrap();
    let before = region.stats();
    let err = region.alloc_bytes(b"three").unwrap_err();
    assert_eq!(err, Error::InjectedFailure { size: 5 });
    assert!(err.is_out_of_memory());
    let after = region.stats();
    assert_eq!(after.objects, before.objects);
    assert_eq!(after.used_bytes, before.used_bytes);
    assert_eq!(after.allocation_failures, 1);
    assert_eq!(pool.stats().allocation_failures, 1);
    region.alloc_bytes(b"four").unwrap();
    assert_eq!(&*region.get(a).unwrap(), b"one");
    assert_eq!(&*region.get(b).unwrap(), &[0; 8]);
    region.check_invariants().unwrap();
}

#[test]
fn zero_cancels_and_invalid_requests_do_not_count() {
    let pool = SegmentPool::new(PoolConfig::default().with_memory_limit(4 << 20)).unwrap();
    let mut region = Region::new(&pool);
    pool.fail_nth_allocation(1);
    pool.fail_nth_allocation(0);
    region.alloc_bytes(b"fine").unwrap();
    pool.fail_nth_allocation(2);
    assert!(matches!(
        region.alloc(1 << 20, 1),
        Err(Error::ObjectTooLarge { .. })
    ));
    region.alloc_bytes(b"first counted").unwrap();
    assert!(matches!(
        region.alloc_bytes(b"second"),
        Err(Error::InjectedFailure { .. })
    ));
}
