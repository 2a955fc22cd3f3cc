//! The metrics snapshot.

use crate::flush::Subject;
use crate::metrics::DirtyMemoryMetrics;

use super::DirtyMemoryManager;

impl<S: ?Sized + Subject> DirtyMemoryManager<S> {
    /// A snapshot of the metrics.
    pub fn metrics(&self) -> DirtyMemoryMetrics {
        let group = self.inner.group.metrics();
        let s = self.inner.shared.state.lock();
        DirtyMemoryMetrics {
            real_dirty: group.real_usage,
            unspooled_dirty: group.unspooled_usage,
            peak_real_dirty: group.peak_real_usage,
            budget: s.limits.real_hard,
            soft_limit: s.limits.unspooled_soft,
            hard_limit: s.limits.unspooled_hard,
            flushes_started: s.counters.started,
            flushes_completed: s.counters.completed,
            flushes_failed: s.counters.failed,
            flushes_failed_permanently: s.counters.failed_permanently,
            flush_retries: s.counters.retries,
            explicit_requests: s.counters.explicit_requests,
            explicit_coalesced: s.counters.explicit_coalesced,
            bytes_flushed: s.counters.bytes_flushed,
            writers_blocked: group.blocked_requests_total,
            writers_waiting: group.queued_requests,
            time_blocked: group.blocked_time_total,
            writing: s
                .running
                .iter()
                .filter(|(_, r)| r.writing)
                .map(|(id, _)| *id)
                .collect(),
            flushes_in_flight: s.in_flight,
            max_concurrent_data_writers: s.counters.max_data_writers,
            retries_pending: s.retries.len(),
            failed_permanently: s.failed_permanently.iter().copied().collect(),
        }
    }
}
