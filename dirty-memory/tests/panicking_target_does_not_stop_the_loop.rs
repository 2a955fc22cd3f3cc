//! A flush target that panics in `start_flush` does not kill the flush
//! loop: the dropped handle fails that flush, and the manager retries it.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::{PATIENCE, complete, memtable};
use dirty_memory::{DirtyMemoryConfig, DirtyMemoryManager, Error, Flush, FlushReason, FlushTarget};
use logalloc::RegionListener;

/// Panics on its first flush, then flushes at once.
#[derive(Default)]
struct PanicsOnce(AtomicBool);

impl FlushTarget for PanicsOnce {
    fn start_flush(&self, flush: Flush) {
        flush.group().ground_evictable(flush.region());
        if !self.0.swap(true, Ordering::SeqCst) {
            panic!("target bug");
        }
        assert_eq!(flush.reason(), FlushReason::Retry);
        complete(flush);
    }

    fn flush_failed_permanently(&self, region: logalloc::RegionId, error: &dirty_memory::Error) {
        panic!("no flush of this test fails permanently, yet {region} did: {error}");
    }
}

#[test]
fn the_flush_is_retried_after_the_target_panicked() {
    let mut config = DirtyMemoryConfig::new("panicky", 1000);
    config.retry_backoff_min = Duration::from_millis(1);
    config.retry_backoff_max = Duration::from_millis(1);
    let m = DirtyMemoryManager::new(config, Arc::new(PanicsOnce::default())).unwrap();
    let region = memtable(m.group(), 1, 300);
    let first = m.request_flush(region).unwrap();
    let err = first
        .wait_timeout(PATIENCE)
        .expect("the first attempt ended");
    assert!(matches!(err, Err(Error::FlushAbandoned { .. })), "{err:?}");
    common::wait_until("the retry flushed the memtable", || {
        m.metrics().flushes_completed == 1
    });
    assert_eq!(m.group().real_usage(), 0);
    m.shutdown();
}
