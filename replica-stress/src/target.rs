//! What the load runs against: the [`Target`] trait, which the `Database`
//! implements, and the figures it reports about itself.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use mutation::{DecoratedKey, Mutation};

/// Appends that waited for room in the commit log (`commitlog::LogStats`'s
/// `budget_waits`, `rotation_waits`, `size_limit_waits` and
/// `room_wait_micros`): where a write's "log append" phase goes when it is
/// not the sync.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogRoomWaits {
    /// Appends that found the unwritten buffers at their budget.
    pub budget: u64,
    /// Appends that waited for another writer's switch to a new segment.
    pub rotation: u64,
    /// Appends that waited at the size limit for a segment to be freed.
    pub size_limit: u64,
    /// The time those appends waited, summed over them.
    pub time: Duration,
}

impl LogRoomWaits {
    /// Whether any append waited for room (an append that met two causes
    /// counts in both counters).
    pub fn any(&self) -> bool {
        self.budget + self.rotation + self.size_limit > 0
    }
}

/// Figures a target reports about itself; the runner samples them once per
/// interval for the progress line and at the end for the summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TargetStats {
    /// Real dirty memory: every byte the memtables hold.
    pub real_dirty: u64,
    /// Unspooled dirty memory: real dirty minus what in-progress flushes
    /// have already written out.
    pub unspooled_dirty: u64,
    /// The highest real dirty memory the target has seen, if it keeps a
    /// high-water mark (0 if not); the summary's peak is the larger of this
    /// and the per-interval samples of `real_dirty`.
    pub peak_real_dirty: u64,
    /// The dirty-memory budget (the real hard limit).
    pub dirty_budget: u64,
    /// Flushes completed so far.
    pub flushes: u64,
    /// Bytes of memtable data those flushes wrote.
    pub flushed_bytes: u64,
    /// Total time writers spent waiting for dirty memory, summed over
    /// writers.
    pub writers_blocked: Duration,
    /// Bytes the commit log appended (0 without a commit log).
    pub commitlog_bytes: u64,
    /// The commit log's fdatasyncs.
    pub commitlog_syncs: u64,
    /// Log entries those syncs covered: over `commitlog_syncs`, the mean
    /// group size of group commit.
    pub commitlog_synced_entries: u64,
    /// Periodic-mode writes the commit log held until a sync covered them,
    /// because its syncs lagged two intervals behind (a disk slower than
    /// the load).
    pub commitlog_lag_waits: u64,
    /// Appends that waited for room in the commit log before being placed,
    /// by cause, and the time they waited.
    pub commitlog_room_waits: LogRoomWaits,
    /// Bytes the memtables' memory pool holds from the system allocator
    /// (it grows to its peak and keeps it): the part of the heap that is
    /// the pool, for telling it from the rest (0 if the target has none).
    pub memtable_pool_bytes: u64,
    /// The memtable pool's limit as configured (0 if the target has
    /// none): the dirty budgets (the user tables' and the system
    /// tables'), plus the row cache's share or, without a cache, as much
    /// again as headroom.
    pub memory_pool_limit: u64,
    /// The system tables' dirty-memory budget, part of the pool.
    pub system_dirty_budget: u64,
    /// The row cache's share of the pool (0 without a cache).
    pub cache_share: u64,
    /// Whether the target reads through a row cache (the hit figures are
    /// 0 without one).
    pub cache_enabled: bool,
    /// Reads the row cache answered (partitions, or known-empty ranges).
    pub cache_hits: u64,
    /// Reads the row cache had to pass on to the sstables.
    pub cache_misses: u64,
    /// Compaction: sstables, bytes compacted, write amplification.
    pub compaction: crate::CompactionFigures,
    /// Where writes spent their time, phase by phase (all zero if the
    /// target does not measure it).
    pub write_phases: replica::WritePhases,
}

impl TargetStats {
    /// The figures of what happened after `earlier` (a snapshot of the
    /// same target): the counters (flushes, bytes, syncs, waits, hits,
    /// compaction's work, the write phases' totals and slow writes) less
    /// `earlier`'s; the levels (dirty memory, the pool, sstables now) as
    /// they are now; the peak real dirty memory if it rose since
    /// `earlier`, else 0 (unknown: the caller's samples stand in); the
    /// other high-water marks (the write phases' longest times, peak
    /// temporary bytes) as they are now, which may be the earlier
    /// phase's. A run reports its own work apart from its populate phase
    /// this way.
    #[must_use]
    pub fn since(&self, earlier: &TargetStats) -> TargetStats {
        let mut s = *self;
        // A high-water mark the run did not raise is the earlier phase's:
        // 0 lets the run's own samples stand in for it.
        if s.peak_real_dirty <= earlier.peak_real_dirty {
            s.peak_real_dirty = 0;
        }
        s.flushes = s.flushes.saturating_sub(earlier.flushes);
        s.flushed_bytes = s.flushed_bytes.saturating_sub(earlier.flushed_bytes);
        s.writers_blocked = s.writers_blocked.saturating_sub(earlier.writers_blocked);
        s.commitlog_bytes = s.commitlog_bytes.saturating_sub(earlier.commitlog_bytes);
        s.commitlog_syncs = s.commitlog_syncs.saturating_sub(earlier.commitlog_syncs);
        s.commitlog_synced_entries = s
            .commitlog_synced_entries
            .saturating_sub(earlier.commitlog_synced_entries);
        s.commitlog_lag_waits = s
            .commitlog_lag_waits
            .saturating_sub(earlier.commitlog_lag_waits);
        let (w, e) = (&mut s.commitlog_room_waits, &earlier.commitlog_room_waits);
        w.budget = w.budget.saturating_sub(e.budget);
        w.rotation = w.rotation.saturating_sub(e.rotation);
        w.size_limit = w.size_limit.saturating_sub(e.size_limit);
        w.time = w.time.saturating_sub(e.time);
        s.cache_hits = s.cache_hits.saturating_sub(earlier.cache_hits);
        s.cache_misses = s.cache_misses.saturating_sub(earlier.cache_misses);
        let (c, e) = (&mut s.compaction, &earlier.compaction);
        c.jobs = c.jobs.saturating_sub(e.jobs);
        c.bytes_read = c.bytes_read.saturating_sub(e.bytes_read);
        c.bytes_written = c.bytes_written.saturating_sub(e.bytes_written);
        c.flush_bytes = c.flush_bytes.saturating_sub(e.flush_bytes);
        c.user_bytes = c.user_bytes.saturating_sub(e.user_bytes);
        c.reads = c.reads.saturating_sub(e.reads);
        c.sstables_consulted = c.sstables_consulted.saturating_sub(e.sstables_consulted);
        let p = &mut s.write_phases;
        for (now, then) in [
            (&mut p.log_append, &earlier.write_phases.log_append),
            (&mut p.admission, &earlier.write_phases.admission),
            (&mut p.memtable_apply, &earlier.write_phases.memtable_apply),
        ] {
            now.total = now.total.saturating_sub(then.total);
            now.slow = now.slow.saturating_sub(then.slow);
        }
        s
    }

    /// The row cache's hit ratio so far, in `[0, 1]`; `None` without a
    /// cache or before its first read.
    pub fn cache_hit_ratio(&self) -> Option<f64> {
        let total = self.cache_hits + self.cache_misses;
        (self.cache_enabled && total > 0).then(|| self.cache_hits as f64 / total as f64)
    }
}

/// A store the load runs against. The `Database` implements it; tables are
/// named by [`table_name`](crate::table_name) and exist before the
/// run starts.
pub trait Target: Sync {
    /// The target's error; the runner counts errors and keeps the first.
    type Error: std::error::Error;

    /// Writes `mutation` to `table`.
    fn apply(&self, table: &str, mutation: Mutation) -> Result<(), Self::Error>;

    /// Writes `mutation` to `table` as a future, for `--async`: a client
    /// thread keeps many in flight. By default the blocking
    /// [`apply`](Self::apply), run at the call, in a ready future; the
    /// `Database` returns its `apply_async`.
    fn apply_async<'a>(
        &'a self,
        table: &'a str,
        mutation: Mutation,
    ) -> Pin<Box<dyn Future<Output = Result<(), Self::Error>> + 'a>> {
        Box::pin(std::future::ready(self.apply(table, mutation)))
    }

    /// Reads the whole partition `key` of `table`; returns the number of
    /// rows read.
    fn read(&self, table: &str, key: &DecoratedKey) -> Result<u64, Self::Error>;

    /// The target's current figures.
    fn stats(&self) -> TargetStats;

    /// The counters of the target's modelled devices (bytes read and
    /// written, time waited for their bandwidth); none by default.
    fn devices(&self) -> Vec<replica::device::DeviceStats> {
        Vec::new()
    }

    /// Makes every write so far durable in the target's files (the end
    /// of the populate phase); by default nothing to do.
    ///
    /// # Errors
    /// Whatever fails while flushing.
    fn flush(&self) -> Result<(), Self::Error> {
        Ok(())
    }

    /// The target's data directory with the least space available to it,
    /// and that space in bytes; `None` (the default) for a target without
    /// files or when it cannot be told.
    fn free_space(&self) -> Option<(std::path::PathBuf, u64)> {
        None
    }
}
