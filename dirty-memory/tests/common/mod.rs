//! Simulated flush targets and helpers shared by the integration tests.
#![allow(dead_code, unreachable_pub, reason = "each test uses a subset")]

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use dirty_memory::{DirtyMemoryConfig, DirtyMemoryManager, Flush, FlushTarget, LoopMode, Subject};
use logalloc::{RegionId, RegionListener};
use region_group::RegionGroup;

/// A bound on every wait in the tests; never reached when the code is right.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// A flush target that seals (grounds) the region and hands the flush to
/// the test, which drives its progress.
pub struct QueueTarget<S: ?Sized + Subject = ()> {
    flushes: Mutex<VecDeque<Flush<S>>>,
    arrived: Condvar,
}

impl<S: ?Sized + Subject> Default for QueueTarget<S> {
    fn default() -> Self {
        QueueTarget {
            flushes: Mutex::new(VecDeque::new()),
            arrived: Condvar::new(),
        }
    }
}

impl<S: ?Sized + Subject> FlushTarget<S> for QueueTarget<S> {
    fn start_flush(&self, flush: Flush<S>) {
        flush.group().ground_evictable(flush.region());
        self.flushes.lock().unwrap().push_back(flush);
        self.arrived.notify_all();
    }

    fn flush_failed_permanently(&self, region: logalloc::RegionId, error: &dirty_memory::Error) {
        panic!("no flush of this test fails permanently, yet {region} did: {error}");
    }
}

impl<S: ?Sized + Subject> QueueTarget<S> {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The next started flush, waiting for it up to [`PATIENCE`].
    pub fn next(&self) -> Flush<S> {
        let deadline = Instant::now() + PATIENCE;
        let mut q = self.flushes.lock().unwrap();
        loop {
            if let Some(f) = q.pop_front() {
                return f;
            }
            let now = Instant::now();
            assert!(now < deadline, "no flush started within {PATIENCE:?}");
            q = self.arrived.wait_timeout(q, deadline - now).unwrap().0;
        }
    }

    /// The next started flush if one is already queued.
    pub fn try_next(&self) -> Option<Flush<S>> {
        self.flushes.lock().unwrap().pop_front()
    }

    pub fn queued(&self) -> usize {
        self.flushes.lock().unwrap().len()
    }
}

/// Writes the whole region out, releases the permit and drops the region.
pub fn complete(mut flush: Flush) {
    let region = flush.region();
    let group = Arc::clone(flush.group());
    flush.account_written(usize::MAX);
    flush.data_written();
    let size = group.region_size(region).map_or(0, |(s, _)| s);
    flush.finish_releasing(|| group.del(region, size));
}

pub fn id(n: u64) -> RegionId {
    RegionId::from_raw(n)
}

/// Adds a simulated memtable of `bytes` to the group.
pub fn memtable(group: &RegionGroup, n: u64, bytes: usize) -> RegionId {
    let r = id(n);
    group.add(r, 0);
    if bytes > 0 {
        group.increase_usage(r, bytes);
    }
    r
}

pub fn manual(budget: usize, target: Arc<dyn FlushTarget>) -> DirtyMemoryManager {
    let mut config = DirtyMemoryConfig::new("test", budget);
    config.loop_mode = LoopMode::Manual;
    DirtyMemoryManager::new(config, target).expect("valid config")
}

pub fn threaded(budget: usize, target: Arc<dyn FlushTarget>) -> DirtyMemoryManager {
    DirtyMemoryManager::new(DirtyMemoryConfig::new("test", budget), target).expect("valid config")
}

/// Waits (yielding, bounded by [`PATIENCE`]) until `cond` holds.
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::yield_now();
    }
}
