//! A snapshot of a manager's metrics.

use std::time::Duration;

use region_group::RegionId;

/// A point-in-time snapshot of a [`DirtyMemoryManager`](crate::DirtyMemoryManager).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DirtyMemoryMetrics {
    /// Real dirty memory: every byte the group's regions hold.
    pub real_dirty: usize,
    /// Unspooled dirty memory: real minus what running flushes wrote out.
    pub unspooled_dirty: usize,
    /// The highest real dirty memory seen.
    pub peak_real_dirty: usize,
    /// The budget (real hard limit).
    pub budget: usize,
    /// The unspooled soft limit.
    pub soft_limit: usize,
    /// The unspooled hard limit.
    pub hard_limit: usize,
    /// Flush attempts started (retries included).
    pub flushes_started: u64,
    /// Flush attempts that finished successfully.
    pub flushes_completed: u64,
    /// Flush attempts that failed (or were abandoned), permanently or not.
    pub flushes_failed: u64,
    /// Flush attempts that failed permanently (also in `flushes_failed`).
    pub flushes_failed_permanently: u64,
    /// Flush attempts started as retries of failed ones.
    pub flush_retries: u64,
    /// Explicit flush requests received.
    pub explicit_requests: u64,
    /// Explicit flush requests that joined a flush already queued or running.
    pub explicit_coalesced: u64,
    /// Memtable bytes written out (accounted as spooled) by flushes that
    /// finished.
    pub bytes_flushed: u64,
    /// Writes that had to wait for memory before being admitted.
    pub writers_blocked: u64,
    /// Writes waiting for memory right now.
    pub writers_waiting: usize,
    /// Total time writes spent waiting for memory.
    pub time_blocked: Duration,
    /// The regions whose flush is writing data now (under the default policy,
    /// at most one: the current flush).
    pub writing: Vec<RegionId>,
    /// Flushes started and not yet finished (writing or in their tail work).
    pub flushes_in_flight: usize,
    /// The most flushes ever writing data at the same time.
    pub max_concurrent_data_writers: usize,
    /// Failed flushes waiting for their retry.
    pub retries_pending: usize,
    /// The memtables whose last flush failed permanently: kept in memory,
    /// not retried until an explicit request.
    pub failed_permanently: Vec<RegionId>,
}
