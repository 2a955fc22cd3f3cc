//! A budget the pool cannot hold (below one segment, above the pool's
//! limit), for a cache or a tracker, a budget of its own for a cache in a
//! shared tracker, and a piece size of 0 are refused with a message naming
//! the limits; a failing source
//! surfaces as the reader's error, and the cache stays usable.

mod common;

use std::sync::Arc;

use mutation::{ClusteringRange, FragmentReader, PartitionRange};
use row_cache::{CacheConfig, CacheTracker, Error, RowCache, UnderlyingSource};

struct Broken;

impl UnderlyingSource for Broken {
    fn make_reader(
        &self,
        _range: PartitionRange,
        _slice: ClusteringRange,
    ) -> Result<Box<dyn FragmentReader + Send>, mutation::Error> {
        Err(mutation::Error::Source("sstable unreadable".into()))
    }
}

#[test]
fn budgets_outside_the_pool_are_refused() {
    let pool = common::pool(4 << 20);
    let source = Arc::new(common::MemorySource::new());
    for bytes in [0, 1000, (4 << 20) + 1] {
        let err = RowCache::new(
            &pool,
            source.clone(),
            CacheConfig::default().with_max_bytes(bytes),
        )
        .unwrap_err();
        assert!(matches!(err, Error::BudgetOutOfRange { .. }));
        assert_eq!(
            err.to_string(),
            format!(
                "row cache budget of {bytes} bytes is outside the allowed 65536..=4194304 bytes \
                 (one segment up to the pool's memory limit)"
            )
        );
    }
    assert!(
        RowCache::new(
            &pool,
            source,
            CacheConfig::default().with_max_bytes(4 << 20)
        )
        .is_ok()
    );
}

#[test]
fn tracker_budgets_outside_the_pool_are_refused() {
    let pool = common::pool(4 << 20);
    for bytes in [0, 65535, (4 << 20) + 1] {
        let err = CacheTracker::new(&pool, Some(bytes)).unwrap_err();
        assert!(matches!(err, Error::BudgetOutOfRange { .. }), "{err}");
    }
    assert!(CacheTracker::new(&pool, Some(65536)).is_ok());
    assert!(CacheTracker::new(&pool, None).is_ok());
}

#[test]
fn a_cache_in_a_shared_tracker_takes_no_budget_of_its_own() {
    let pool = common::pool(4 << 20);
    let tracker = CacheTracker::new(&pool, Some(1 << 20)).unwrap();
    let source = Arc::new(common::MemorySource::new());
    let err = RowCache::with_tracker(
        &tracker,
        source.clone(),
        CacheConfig::default().with_max_bytes(1 << 20),
    )
    .unwrap_err();
    assert!(matches!(err, Error::BudgetOfSharedTracker { bytes } if bytes == 1 << 20));
    assert_eq!(
        err.to_string(),
        "row cache budget of 1048576 bytes given to a cache in a shared tracker: the \
         tracker's budget bounds all its caches together, so a cache in it takes none"
    );
    let err = RowCache::with_tracker(
        &tracker,
        source.clone(),
        CacheConfig::default().with_piece_bytes(0),
    )
    .unwrap_err();
    assert!(matches!(err, Error::PieceBytesZero));
    // Nothing was left behind by the refusals.
    assert_eq!(tracker.stats().caches, 0);
    let cache = RowCache::with_tracker(&tracker, source, CacheConfig::default()).unwrap();
    assert_eq!(tracker.stats().caches, 1);
    drop(cache);
    assert_eq!(tracker.stats().caches, 0);
}

#[test]
fn a_failing_source_is_the_readers_error() {
    let pool = common::pool(4 << 20);
    let cache = RowCache::new(&pool, Arc::new(Broken), CacheConfig::default()).unwrap();
    let mut r = cache.make_reader(PartitionRange::full(), ClusteringRange::full());
    let err = r.next().unwrap_err();
    assert_eq!(err.to_string(), "fragment source failed");
    assert_eq!(
        std::error::Error::source(&err).unwrap().to_string(),
        "sstable unreadable"
    );
    assert_eq!(cache.stats().partitions, 0);
    cache.check_invariants().unwrap();
}
