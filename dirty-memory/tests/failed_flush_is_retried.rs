//! A failed flush keeps its memtable and is retried until it succeeds.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{PATIENCE, complete, id, memtable};
use dirty_memory::{DirtyMemoryConfig, DirtyMemoryManager, Error, Flush, FlushReason, FlushTarget};
use logalloc::RegionListener;

/// What one attempt saw: its number, reason, the region's size and
/// groundedness, and the group's unspooled usage after writing half.
type Attempt = (u32, FlushReason, Option<(usize, bool)>, usize);

/// Fails the first `failures` attempts after writing half the region.
struct FlakyDisk {
    failures: u32,
    attempts: Mutex<Vec<Attempt>>,
}

impl FlushTarget for FlakyDisk {
    fn start_flush(&self, mut flush: Flush) {
        let group = Arc::clone(flush.group());
        group.ground_evictable(flush.region());
        let size = group.region_size(flush.region());
        flush.account_written(size.map_or(0, |s| s.0 / 2));
        self.attempts.lock().unwrap().push((
            flush.attempt(),
            flush.reason(),
            size,
            group.unspooled_usage(),
        ));
        if flush.attempt() <= self.failures {
            flush.fail(std::io::Error::other("injected write error"));
        } else {
            complete(flush);
        }
    }

    fn flush_failed_permanently(&self, region: logalloc::RegionId, error: &dirty_memory::Error) {
        panic!("no flush of this test fails permanently, yet {region} did: {error}");
    }
}

#[test]
fn three_failures_then_success_and_the_memtable_is_kept_throughout() {
    let disk = Arc::new(FlakyDisk {
        failures: 3,
        attempts: Mutex::new(Vec::new()),
    });
    let mut config = DirtyMemoryConfig::new("flaky", 1000);
    config.retry_backoff_min = Duration::from_millis(1);
    config.retry_backoff_max = Duration::from_millis(4);
    let m = DirtyMemoryManager::new(config, disk.clone()).unwrap();
    memtable(m.group(), 7, 300); // > 250

    // Explicit requests join the retries and report their outcome, until
    // the memtable is flushed and gone.
    let mut errors = 0;
    loop {
        let c = match m.request_flush(id(7)) {
            Ok(c) => c,
            Err(Error::UnknownRegion { .. }) => break,
            Err(e) => panic!("{e}"),
        };
        match c.wait_timeout(PATIENCE).expect("flush attempt finished") {
            Ok(()) => break,
            Err(e) => {
                errors += 1;
                // The cause is the error's source, not part of its message.
                assert!(!e.to_string().contains("injected"), "{e}");
                let source = std::error::Error::source(&e).expect("the cause");
                assert_eq!(source.to_string(), "injected write error");
                assert!(
                    matches!(e, Error::FlushFailed { attempt: 1..=3, .. }),
                    "{e}"
                );
                assert!(
                    m.group().region_size(id(7)).is_some(),
                    "memtable kept after a failure"
                );
            }
        }
    }
    assert!(errors <= 3);
    common::wait_until("the flush completed", || m.metrics().flushes_completed == 1);
    m.shutdown();

    let attempts = disk.attempts.lock().unwrap().clone();
    assert_eq!(attempts.len(), 4, "{attempts:?}");
    for (i, (attempt, reason, size, unspooled)) in attempts.iter().enumerate() {
        assert_eq!(*attempt as usize, i + 1);
        if i > 0 {
            assert_ne!(*reason, FlushReason::Pressure);
        }
        // Every attempt found the whole memtable, and the previous
        // attempt's spooled bytes had been taken back.
        assert_eq!(*size, Some((300, true)));
        assert_eq!(*unspooled, 150);
    }
    let mt = m.metrics();
    assert_eq!(
        (mt.flushes_failed, mt.flushes_completed, mt.flush_retries),
        (3, 1, 3)
    );
    assert_eq!(mt.real_dirty, 0);
    assert_eq!(mt.bytes_flushed, 300);
}

#[test]
fn an_abandoned_flush_counts_as_failed_and_is_retried() {
    struct Forgetful(Mutex<u32>);
    impl FlushTarget for Forgetful {
        fn start_flush(&self, flush: Flush) {
            flush.group().ground_evictable(flush.region());
            let mut calls = self.0.lock().unwrap();
            *calls += 1;
            if *calls > 1 {
                complete(flush);
            } // else: dropped without finish or fail
        }

        fn flush_failed_permanently(
            &self,
            region: logalloc::RegionId,
            error: &dirty_memory::Error,
        ) {
            panic!("no flush of this test fails permanently, yet {region} did: {error}");
        }
    }
    let mut config = DirtyMemoryConfig::new("forgetful", 1000);
    config.retry_backoff_min = Duration::from_millis(1);
    let m = DirtyMemoryManager::new(config, Arc::new(Forgetful(Mutex::new(0)))).unwrap();
    memtable(m.group(), 1, 300);
    common::wait_until("the retry succeeded", || m.metrics().flushes_completed == 1);
    m.shutdown();
    assert_eq!(m.metrics().flushes_failed, 1);
}
