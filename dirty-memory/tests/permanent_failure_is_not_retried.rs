//! A permanent flush failure (data the sstable format cannot hold) is
//! reported to the owner once and not retried, while the memtable stays in
//! memory; the policy moves on to other memtables, and an explicit request
//! tries the failed one again. (Transient failures are retried with
//! back-off: see `failed_flush_is_retried.rs`.)

mod common;

use std::sync::{Arc, Mutex};

use common::{complete, id, manual, memtable};
use dirty_memory::{Error, Flush, FlushReason, FlushTarget};
use logalloc::{RegionId, RegionListener};

/// Fails the first flush of region 1 permanently, completes every other.
#[derive(Default)]
struct UnwritableOnce {
    failed: Mutex<bool>,
    reports: Mutex<Vec<(RegionId, String)>>,
    started: Mutex<Vec<(RegionId, u32, FlushReason)>>,
}

impl FlushTarget for UnwritableOnce {
    fn start_flush(&self, mut flush: Flush) {
        flush.group().ground_evictable(flush.region());
        self.started
            .lock()
            .unwrap()
            .push((flush.region(), flush.attempt(), flush.reason()));
        let mut failed = self.failed.lock().unwrap();
        if flush.region() == id(1) && !*failed {
            *failed = true;
            drop(failed);
            flush.account_written(100); // part of it was written
            flush.fail_permanently("cell value of 70 MiB exceeds the 64 MiB block limit");
        } else {
            drop(failed);
            complete(flush);
        }
    }

    fn flush_failed_permanently(&self, region: RegionId, error: &Error) {
        self.reports
            .lock()
            .unwrap()
            .push((region, error.to_string()));
    }
}

#[test]
fn a_permanent_failure_is_reported_once_and_the_memtable_stays() {
    let target = Arc::new(UnwritableOnce::default());
    let m = manual(1000, target.clone());
    memtable(m.group(), 1, 300); // over the soft limit (250)
    assert_eq!(m.poll_flushes().unwrap(), 1);

    // Reported once, with the cause as the error's source.
    let reports = target.reports.lock().unwrap().clone();
    assert_eq!(
        reports,
        [(
            id(1),
            "test: flush of region#1 failed permanently on attempt 1; the memtable is kept and not retried"
                .to_owned()
        )]
    );
    // Not retried: the loop starts nothing more, however often it looks,
    // and schedules no retry.
    for _ in 0..3 {
        assert_eq!(m.poll_flushes().unwrap(), 0);
    }
    let metrics = m.metrics();
    assert_eq!(metrics.retries_pending, 0);
    assert_eq!(metrics.failed_permanently, [id(1)]);
    assert_eq!(
        (metrics.flushes_failed, metrics.flushes_failed_permanently),
        (1, 1)
    );
    // The memtable is kept, whole (its spooled bytes given back), and
    // grounded so the policy does not pick it again.
    assert_eq!(m.group().region_size(id(1)), Some((300, true)));
    assert_eq!(m.group().unspooled_usage(), 300);

    // The policy moves on: another memtable is flushed under pressure.
    memtable(m.group(), 2, 50);
    assert_eq!(m.poll_flushes().unwrap(), 1);
    assert!(m.group().region_size(id(2)).is_none(), "memtable 2 flushed");

    // An explicit request tries the failed memtable again, from attempt 1.
    let completion = m.request_flush(id(1)).unwrap();
    assert_eq!(m.poll_flushes().unwrap(), 1);
    assert!(matches!(completion.wait(), Ok(())));
    assert!(m.group().region_size(id(1)).is_none());
    assert_eq!(
        target.started.lock().unwrap().last(),
        Some(&(id(1), 1, FlushReason::Explicit))
    );
    assert_eq!(target.reports.lock().unwrap().len(), 1, "reported once");
    assert!(m.metrics().failed_permanently.is_empty());
}

#[test]
fn explicit_waiters_see_the_permanent_error_and_its_cause() {
    let target = Arc::new(UnwritableOnce::default());
    let m = manual(1000, target.clone());
    memtable(m.group(), 1, 10); // below the soft limit: only explicit flushes
    let completion = m.request_flush(id(1)).unwrap();
    assert_eq!(m.poll_flushes().unwrap(), 1);
    let err = completion.wait().unwrap_err();
    assert!(err.is_permanent_flush_failure(), "{err}");
    assert!(matches!(
        err,
        Error::FlushFailedPermanently { attempt: 1, .. }
    ));
    assert_eq!(
        std::error::Error::source(&err).map(ToString::to_string),
        Some("cell value of 70 MiB exceeds the 64 MiB block limit".to_owned())
    );
    assert_eq!(m.poll_flushes().unwrap(), 0, "not retried");
    assert_eq!(m.group().region_size(id(1)), Some((10, true)));
}
