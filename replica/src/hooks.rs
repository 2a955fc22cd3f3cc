//! Test hooks (feature `testing`): a callback the database calls at chosen
//! points of its write and flush paths, so a test can pause a thread there
//! and build an interleaving deterministically (or a crash test can kill
//! the process at that point).
//!
//! Without the feature nothing of this exists and the call sites compile
//! to nothing.

use std::fmt;

use crate::sync::{Arc, Mutex};

/// Where the database calls the test hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HookPoint {
    /// A flush installed a fresh active memtable and has not sealed the
    /// memtable it flushes yet (runs on the dirty-memory manager's thread).
    FlushInstalledFresh,
    /// A writer holds the table's active memtable (weakly) and has not
    /// applied its mutation to it yet (runs on the writer's thread).
    WriterTookActive,
    /// A flush's sstable joined the table's sstables while its memtable is
    /// still listed, and the row cache has not taken the memtable's data
    /// yet (tables with a cache only; runs on the thread completing the
    /// flush).
    FlushBeforeCacheUpdate,
    /// A cache update released a first part of its flushed memtable's
    /// memory from the real dirty limit and has more partitions to bring
    /// in (tables with a cache only; runs on the thread completing the
    /// flush).
    CacheUpdateReleasedMemory,
    /// A compaction job of a table is about to start (runs on a compaction
    /// worker, before the job writes anything).
    CompactionJobStarting,
    /// A flush is about to wait for its table's compactions to catch up
    /// (`FlushThrottleConfig`; runs on the flush's data worker, once per
    /// flush that waits, before it waits).
    FlushHeldForCompaction,
    /// A flushed memtable's memory has left the dirty-memory accounting
    /// and the commit log has not let go of its entries yet, nor is the
    /// flush reported finished (runs on the thread completing the flush).
    FlushBeforeLogDiscard,
}

/// The callback; see [`Database::set_test_hook`](crate::Database::set_test_hook).
pub type TestHook = dyn Fn(HookPoint) + Send + Sync;

/// Where the database keeps its hook: shared by the tables and the flush
/// path.
#[derive(Clone, Default)]
pub(crate) struct Hooks(Arc<Mutex<Option<Arc<TestHook>>>>);

impl fmt::Debug for Hooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hooks").finish_non_exhaustive()
    }
}

impl Hooks {
    /// Installs `hook` (or removes it).
    pub(crate) fn set(&self, hook: Option<Arc<TestHook>>) {
        *self.0.lock() = hook;
    }

    /// Calls the hook, if one is installed, at `point` (without holding
    /// the slot's lock, so the hook may block).
    pub(crate) fn fire(&self, point: HookPoint) {
        let hook = self.0.lock().clone();
        if let Some(hook) = hook {
            hook(point);
        }
    }
}
