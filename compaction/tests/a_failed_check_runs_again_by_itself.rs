//! A table whose compaction fails (an I/O error, a full disk) is not left
//! with its sstables piled up until the next flush asks again: the manager
//! runs its check again by itself, after a back-off that doubles with each
//! failure in a row, and the check that succeeds ends the run of failures.

mod common;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use common::{TestTable, flush, job_options, live};
use compaction::{
    CompactionManager, CompactionTable, JobOptions, ManagerConfig, ManualClock, MaxPurgeable,
    SizeTiered, SstableSet, Strategy,
};
use mutation::{DecoratedKey, Timestamp};

/// A table whose first `failures` jobs fail: their options are refused
/// (a gc_grace beyond what the format holds), as an I/O error would fail
/// them, with the inputs kept.
struct Flaky {
    inner: TestTable,
    failures: AtomicU32,
    /// When each job asked for its options.
    attempts: Mutex<Vec<Instant>>,
}

impl MaxPurgeable for Flaky {
    fn max_purgeable(&self, key: &DecoratedKey) -> Timestamp {
        self.inner.max_purgeable(key)
    }
}

impl CompactionTable for Flaky {
    fn name(&self) -> String {
        "flaky".into()
    }
    fn sstables(&self) -> &SstableSet {
        self.inner.sstables()
    }
    fn strategy(&self) -> &dyn Strategy {
        self.inner.strategy()
    }
    fn job_options(&self) -> JobOptions {
        self.attempts.lock().unwrap().push(Instant::now());
        let mut options = self.inner.job_options();
        let left = self.failures.load(Ordering::SeqCst);
        if left > 0 {
            self.failures.store(left - 1, Ordering::SeqCst);
            options.gc_grace = Duration::from_secs(u64::from(u32::MAX) + 1);
        }
        options
    }
    fn replaced(&self, removed: &[u64], added: &[u64]) {
        self.inner.replaced(removed, added);
    }
}

/// Where the table reports its swaps (removed, added).
type Swaps = mpsc::Receiver<(Vec<u64>, Vec<u64>)>;

fn flaky(dir: &std::path::Path, failures: u32) -> (Arc<Flaky>, Swaps) {
    let set = SstableSet::open(dir).unwrap();
    for round in 0..4 {
        flush(
            &set,
            (0..20)
                .map(|k| live(&format!("k{k}"), round, 100))
                .collect(),
        );
    }
    let (tx, swaps) = mpsc::channel();
    let inner = TestTable {
        set,
        strategy: Box::new(SizeTiered::default()),
        options: job_options(Arc::new(ManualClock::new(1_000_000))),
        started: Mutex::new(None),
        swaps: Mutex::new(tx),
    };
    let table = Arc::new(Flaky {
        inner,
        failures: AtomicU32::new(failures),
        attempts: Mutex::new(Vec::new()),
    });
    (table, swaps)
}

#[test]
fn a_failed_check_is_retried_with_a_doubling_back_off_until_it_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let (table, swaps) = flaky(dir.path(), 3);
    let mut config = ManagerConfig::default();
    config.retry_backoff_min = Duration::from_millis(20);
    config.retry_backoff_max = Duration::from_millis(60);
    let manager = CompactionManager::new(config).unwrap();
    // One submit: no flush asks again.
    manager.submit(table.clone()).unwrap();
    let (removed, added) = swaps
        .recv_timeout(Duration::from_secs(20))
        .expect("the table is compacted after its failures, without another submit");
    assert_eq!((removed.len(), added.len()), (4, 1));
    let m = manager.metrics();
    assert_eq!(m.jobs_failed, 3, "{m:?}");
    assert_eq!(m.retries_scheduled, 3, "{m:?}");
    assert_eq!(m.jobs_completed, 1, "{m:?}");
    let attempts = table.attempts.lock().unwrap().clone();
    assert_eq!(
        attempts.len(),
        4,
        "three failures, then the job that succeeded"
    );
    // The waits: at least 20, 40 and 60 ms (capped) after each failure.
    for (i, least) in [20u64, 40, 60].into_iter().enumerate() {
        let waited = attempts[i + 1] - attempts[i];
        assert!(
            waited >= Duration::from_millis(least),
            "retry {} came after {waited:?}, before its {least} ms back-off",
            i + 1
        );
    }
    manager.close();
    assert_eq!(table.sstables().snapshot().len(), 1);
    assert_eq!(manager.metrics().retries_waiting, 0);
}

#[test]
fn close_cancels_a_waiting_retry() {
    let dir = tempfile::tempdir().unwrap();
    let (table, _swaps) = flaky(dir.path(), u32::MAX);
    let mut config = ManagerConfig::default();
    config.retry_backoff_min = Duration::from_secs(3600);
    config.retry_backoff_max = Duration::from_secs(3600);
    let manager = CompactionManager::new(config).unwrap();
    manager.submit(table.clone()).unwrap();
    // The first failure schedules a retry an hour away.
    let deadline = Instant::now() + Duration::from_secs(20);
    while manager.metrics().retries_waiting == 0 {
        assert!(Instant::now() < deadline, "no retry was scheduled");
        std::thread::yield_now();
    }
    let started = Instant::now();
    manager.close();
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "close waited for the retry"
    );
    let m = manager.metrics();
    assert_eq!(
        (m.jobs_failed, m.retries_scheduled, m.retries_waiting),
        (1, 1, 0),
        "{m:?}"
    );
    assert_eq!(table.sstables().snapshot().len(), 4, "inputs kept");
    drop(manager);
    // The cancelled retry held the table; nothing holds it now.
    assert_eq!(Arc::strong_count(&table), 1);
}

#[test]
fn bad_back_offs_are_refused() {
    let mut config = ManagerConfig::default();
    config.retry_backoff_min = Duration::ZERO;
    let e = CompactionManager::new(config).unwrap_err().to_string();
    assert!(e.contains("retry_backoff_min"), "{e}");
    let mut config = ManagerConfig::default();
    config.retry_backoff_max = Duration::from_millis(1);
    let e = CompactionManager::new(config).unwrap_err().to_string();
    assert!(e.contains("retry_backoff_max"), "{e}");
}
