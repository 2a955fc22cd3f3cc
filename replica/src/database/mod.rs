//! The [`Database`]: tables of memtables over sstables, writes admitted by
//! dirty-memory managers, flushes run by the flush scheduler, reads merged
//! from every source.
//!
//! This file is the façade (the public operations, `close`, the
//! database's figures); the parts, one concern each:
//!
//! * `open.rs`: opening (locks, catalog, pool, flush machinery, tables,
//!   the commit log's replay), unwound by drop order on an error;
//! * `gate.rs`: the gate every operation passes and `close` shuts;
//! * `index.rs`: the open tables by name and by commit-log id;
//! * `handle.rs`: [`TableHandle`], a table without a lookup per operation;
//! * `table.rs`: one table, its counters and its write path;
//! * `memtable_list.rs`: the active and sealed memtables, and the order a
//!   flush and a read take them and the sstables in;
//! * `read.rs`: a table's read path and [`TableReader`];
//! * `sstables.rs`: a table's sstable sets and their compaction;
//! * `flush.rs`: the flush target and the flush job;
//! * `cache_update.rs`: the flush's hand-off to the row cache;
//! * `metrics.rs`, `phases.rs`: a table's figures, where writes wait.

use commitlog::{CommitLog, LogStats, ReplayReport};
use dirty_memory::{DirtyMemoryMetrics, FlushCompletion};
use flush_scheduler::FlushScheduler;
use logalloc::SegmentPool;
use mutation::{ClusteringRange, DecoratedKey, FragmentReader, Mutation, PartitionRange, limits};

use crate::catalog::{Catalog, TableSchema};
use crate::config::DatabaseConfig;
use crate::devices::Devices;
use crate::error::Error;
use crate::layout::{create_table_dirs, remove_table_dirs_on};
use crate::lock::DirectoryLock;
use crate::sync::{Arc, Mutex};

mod cache_update;
mod flush;
pub(crate) mod flush_throttle;
mod gate;
mod handle;
mod index;
#[cfg(all(test, loom))]
mod loom_tests;
pub(crate) mod memtable_list;
mod metrics;
mod open;
mod phases;
mod read;
pub(crate) mod sstables;
mod table;
#[cfg(all(test, not(loom)))]
mod tests;

use flush::{FlushRouter, Manager};
pub use flush_throttle::FlushThrottleConfig;
use gate::Gate;
pub use handle::TableHandle;
use index::TableIndex;
pub use metrics::{CacheMetrics, TableMetrics};
pub use phases::{SLOW_PHASE, WritePhase, WritePhases};
pub use read::TableReader;
pub use sstables::{CompactionConfig, TableCompactionMetrics};
use table::Table;

/// Figures of a whole database, from [`Database::metrics`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DatabaseMetrics {
    /// Each table's figures, by name.
    pub tables: Vec<TableMetrics>,
    /// The user tables' dirty-memory manager: real and unspooled dirty
    /// memory, its peak, flushes started, completed, failed and retried,
    /// bytes flushed, writers blocked and the time they waited.
    pub user: DirtyMemoryMetrics,
    /// The system tables' manager, with its own small budget.
    pub system: DirtyMemoryMetrics,
    /// Sstable bytes written by flushes (Data and Index), all tables.
    pub sstable_bytes_written: u64,
    /// Each modelled device's counters (bytes read and written, time the
    /// I/O waited for its bandwidth), in the order
    /// [`DatabaseConfig::devices`] defines them; empty without a model.
    pub devices: Vec<device::DeviceStats>,
    /// Memtables whose flush failed permanently (kept in memory), with
    /// the error.
    pub failed_permanently: Vec<String>,
    /// The commit log's counters (entries, bytes, syncs, segments), if
    /// there is a commit log.
    pub commitlog: Option<LogStats>,
    /// The row caches' figures, summed over the tables (all zero without
    /// a cache).
    pub cache: CacheMetrics,
    /// The memory limit of the pool the memtables and row caches share.
    pub pool_limit: usize,
    /// Bytes of the pool's segments in use now (memtables and caches).
    pub pool_used: usize,
    /// Bytes the pool has taken from the system (its peak: a pool never
    /// gives memory back): with [`DatabaseConfig::prefault_memory`] at
    /// least the user budget and the cache's share from the start.
    pub pool_system_bytes: usize,
    /// Bytes the pool's reclaim evicted from the caches (when an
    /// allocation found the pool dry), over the database's life.
    pub pool_bytes_evicted: u64,
    /// Allocations the pool could not serve even after reclaim.
    pub pool_allocation_failures: u64,
    /// The compaction manager's counters: pending and running jobs, bytes
    /// read and written, peak temporary disk use, backlog.
    pub compaction: ::compaction::CompactionMetrics,
}

impl DatabaseMetrics {
    /// Write amplification: sstable bytes written by flushes and
    /// compactions over the bytes users wrote (each mutation's
    /// `mutation::limits::size_bound`); `None` before any write.
    pub fn write_amplification(&self) -> Option<f64> {
        let user: u64 = self.tables.iter().map(|t| t.compaction.user_bytes).sum();
        (user > 0).then(|| {
            (self.sstable_bytes_written + self.compaction.bytes_written) as f64 / user as f64
        })
    }

    /// Sstables of every table.
    pub fn sstables(&self) -> usize {
        self.tables.iter().map(|t| t.sstables).sum()
    }
}

/// The commit log's directory inside the first data directory (the dot
/// keeps it apart from table directories).
pub const COMMITLOG_DIR_NAME: &str = "replica.commitlog";

/// A database: named tables of partitions, written through memtables and
/// flushed to sstables. See the [crate documentation](crate) for the
/// design; every method may be called from any number of threads.
pub struct Database {
    config: DatabaseConfig,
    locks: Mutex<Vec<DirectoryLock>>,
    catalog: Mutex<Catalog>,
    tables: Arc<TableIndex>,
    user: Arc<Manager>,
    system: Arc<Manager>,
    scheduler: Arc<FlushScheduler>,
    router: Arc<FlushRouter>,
    devices: Arc<Devices>,
    pool: Arc<SegmentPool>,
    /// The tracker every table's row cache is in: one region, one LRU
    /// list and one budget (the cache share) for all of them; `None`: no
    /// caches.
    cache_tracker: Option<row_cache::CacheTracker>,
    compaction: Arc<sstables::CompactionShared>,
    gate: Gate,
    /// What replaying the commit log at open found.
    replay: Option<ReplayReport>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("data_dirs", &self.config.data_dirs)
            .field("tables", &self.tables.len())
            .finish_non_exhaustive()
    }
}

fn start_error(what: &'static str) -> impl FnOnce(String) -> Error {
    move |detail| Error::Start { what, detail }
}

impl Database {
    /// What replaying the commit log at open found (entries replayed,
    /// damage skipped and reported), if there is a commit log.
    pub fn replay_report(&self) -> Option<&ReplayReport> {
        self.replay.as_ref()
    }

    fn log(&self) -> Option<&CommitLog> {
        self.router.log.get().map(|log| &**log)
    }

    /// The configuration the database was opened with.
    pub fn config(&self) -> &DatabaseConfig {
        &self.config
    }

    fn lookup(&self, name: &str) -> Result<Arc<Table>, Error> {
        self.tables.get(name).ok_or_else(|| Error::UnknownTable {
            name: name.to_owned(),
        })
    }

    fn manager(&self, table: &Table) -> &Manager {
        if table.schema.options().system {
            &self.system
        } else {
            &self.user
        }
    }

    fn enter(&self, operation: &'static str) -> Result<gate::Pass<'_>, Error> {
        self.gate.enter().ok_or(Error::Closed { operation })
    }

    /// Creates the table `schema` names, as a new incarnation with the
    /// catalog's next generation (its own is ignored). The catalog change
    /// is durable before this returns, so the table survives a reopen.
    ///
    /// # Errors
    /// [`Error::TableExists`], [`Error::TooManyTables`], [`Error::Closed`],
    /// [`Error::ForeignTableDirectory`] if a directory of the table's name
    /// exists that this database did not create (it is left alone), or the
    /// I/O error of persisting the catalog or creating the table's
    /// directories; nothing is changed then.
    pub fn create_table(&self, schema: TableSchema) -> Result<(), Error> {
        let _pass = self.enter("create_table")?;
        let mut catalog = self.catalog.lock();
        let schema = catalog.create_table(schema)?;
        let loaded = create_table_dirs(&self.config.fs, &schema, self.config.all_dirs())
            .and_then(|_| self.load_table(schema.clone()));
        if let Err(e) = loaded {
            // Leave nothing behind: the catalog forgets the table again,
            // and only the directories it marked as its own go.
            let _ = catalog.drop_table(schema.name());
            let _ = remove_table_dirs_on(&self.config.fs, &schema, self.config.all_dirs());
            return Err(e);
        }
        Ok(())
    }

    /// A handle on the table `name`, which writes, reads and flushes it
    /// without looking its name up again ([`TableHandle`]).
    ///
    /// # Errors
    /// [`Error::UnknownTable`], [`Error::Closed`].
    pub fn table(&self, name: &str) -> Result<TableHandle<'_>, Error> {
        let _pass = self.enter("table")?;
        Ok(TableHandle::new(self, self.lookup(name)?))
    }

    /// Drops the table `name` with its data: its memtables are discarded
    /// and its directories removed.
    ///
    /// # Errors
    /// [`Error::UnknownTable`], [`Error::Closed`], or the I/O error of
    /// persisting the catalog (the table is then still there) or of
    /// removing its files (removed at the next open then).
    pub fn drop_table(&self, name: &str) -> Result<(), Error> {
        let _pass = self.enter("drop_table")?;
        let mut catalog = self.catalog.lock();
        let table = self.lookup(name)?;
        catalog.drop_table(name)?;
        self.tables.remove(name);
        table.dropped.store(true, crate::sync::Ordering::Release);
        // Its jobs end before its files go.
        table.sstables.stop();
        for memtable in table.list.memtables() {
            memtable.detach_from_region_group();
        }
        // The cache's memory goes back to the pool now, not when the last
        // reader lets the table go.
        if let Some(cache) = &table.cache {
            cache.clear();
        }
        // Replay must not bring the dropped data back.
        let logged = match self.log() {
            Some(log) => log
                .drop_table(table.id)
                .map(drop)
                .map_err(Error::commit_log),
            None => Ok(()),
        };
        remove_table_dirs_on(&self.config.fs, &table.schema, self.config.all_dirs())?;
        logged
    }

    /// The tables, by name.
    pub fn tables(&self) -> Vec<TableSchema> {
        self.catalog.lock().tables().cloned().collect()
    }

    /// Writes `mutation` to `table`: checked, appended to the commit log
    /// (if configured; in batch mode this returns only once the log entry
    /// is synced), admitted by the dirty-memory manager (waiting while
    /// dirty memory is at its hard limit, at most
    /// [`DatabaseConfig::write_timeout`]), then applied to the table's
    /// active memtable. When this returns the write is readable; without a
    /// commit log it is durable only once flushed.
    ///
    /// # Errors
    /// [`Error::UnknownTable`]; [`Error::InvalidMutation`] for a mutation
    /// that holds nothing; [`Error::MutationTooLarge`] beyond
    /// `mutation::limits`; [`Error::WriteTimeout`] naming the table;
    /// [`Error::Memtable`] if the memtable refuses it; [`Error::CommitLog`]
    /// if the log cannot take it; [`Error::Closed`]. Nothing is applied to
    /// a memtable on an error (a write that timed out after its log append
    /// may come back at replay, as a timed-out write may in Cassandra).
    pub fn apply(&self, table: &str, mutation: &Mutation) -> Result<(), Error> {
        let _pass = self.enter("apply")?;
        let t = self.lookup(table)?;
        self.write(&t, mutation)
    }

    /// [`apply`](Self::apply) to `t`, inside the gate.
    fn write(&self, t: &Table, mutation: &Mutation) -> Result<(), Error> {
        let checked = check_mutation(t.name(), mutation)?;
        t.apply(
            self.manager(t),
            checked,
            self.config.write_timeout,
            self.log(),
        )
    }

    /// The asynchronous form of [`apply`](Self::apply): the same checks,
    /// commit-log append, dirty-memory admission and apply, but the waits
    /// (for the log's sync in batch mode, for dirty memory at its hard
    /// limit) are futures, so one thread can keep many writes in flight.
    /// The future is runtime-agnostic: it registers its task's waker with
    /// the log (woken after the fdatasync that covered the entry, by the
    /// log's flusher thread) and with the dirty-memory group (woken when
    /// the write is admitted). The checks and the log append run at the
    /// first poll; the log append itself may block briefly when the log's
    /// buffers are at their budget or the log is at its size limit, as for
    /// `apply`. When the future resolves `Ok` the write is readable (and in
    /// batch mode durable), exactly as when `apply` returns.
    ///
    /// # Cancellation
    /// Dropping the future before it resolved leaves no partial state: the
    /// write reaches its memtable inside the one poll that then resolves
    /// the future, so a dropped future never applied its write and it is
    /// never readable from a memtable. What can be observed of it:
    /// * dropped before its first poll, or before its log append: nothing;
    /// * dropped after its log append (waiting for the sync or for dirty
    ///   memory): the entry is handed back to the log at once (it pins no
    ///   segment), but it stays in its segment until that is retired, so a
    ///   crash and replay before then may bring the write back, whole (a
    ///   timed-out write may come back the same way, as in Cassandra).
    ///
    /// A future that has been polled and has not finished is an operation
    /// in progress: [`close`](Self::close) (and `crash`) wait for it to
    /// finish or be dropped, so do not close the database from the thread
    /// that would poll it.
    ///
    /// # Errors
    /// Those of [`apply`](Self::apply), from the future.
    pub async fn apply_async(&self, table: &str, mutation: Mutation) -> Result<(), Error> {
        let _pass = self.enter("apply")?;
        let t = self.lookup(table)?;
        self.write_async(&t, mutation).await
    }

    /// [`apply_async`](Self::apply_async) to `t`, inside the gate.
    async fn write_async(&self, t: &Table, mutation: Mutation) -> Result<(), Error> {
        let checked = check_mutation(t.name(), &mutation)?;
        t.apply_async(
            self.manager(t),
            checked,
            self.config.write_timeout,
            self.log(),
        )
        .await
    }

    /// Reads partition `key` of `table`, restricted to the clustering rows
    /// in `slice` (its static row and partition tombstone always come),
    /// merged from every memtable and sstable; `None` if no source has it.
    ///
    /// # Errors
    /// [`Error::UnknownTable`], [`Error::Closed`], or a source's read error.
    pub fn get(
        &self,
        table: &str,
        key: &DecoratedKey,
        slice: ClusteringRange,
    ) -> Result<Option<Mutation>, Error> {
        let _pass = self.enter("get")?;
        let t = self.lookup(table)?;
        read_partition(&t, key, slice)
    }

    /// A reader of the partitions of `table` in `range`, in ring order,
    /// merged from every memtable and sstable. It stays valid across
    /// flushes, and sees each row once.
    ///
    /// # Errors
    /// [`Error::UnknownTable`], [`Error::Closed`], or a source's error.
    pub fn scan(&self, table: &str, range: PartitionRange) -> Result<TableReader, Error> {
        let _pass = self.enter("scan")?;
        self.lookup(table)?
            .make_reader(range, ClusteringRange::full())
    }

    /// Flushes `table`: every write applied before the call is in an
    /// sstable when this returns.
    ///
    /// # Errors
    /// [`Error::UnknownTable`], [`Error::Closed`], [`Error::Flush`] if a
    /// flush failed (its memtable is kept; dirty-memory retries transient
    /// failures in the background), [`Error::DiskFull`] naming the
    /// directory if it failed because the disk was full.
    pub fn flush(&self, table: &str) -> Result<(), Error> {
        let _pass = self.enter("flush")?;
        let t = self.lookup(table)?;
        self.flush_tables(&[t])
    }

    /// Flushes every table (see [`flush`](Self::flush)).
    ///
    /// # Errors
    /// As [`flush`](Self::flush), for the first table that failed.
    pub fn flush_all(&self) -> Result<(), Error> {
        let _pass = self.enter("flush_all")?;
        self.flush_tables(&self.tables.all())
    }

    /// Requests a flush of every memtable of `tables` that holds data, then
    /// waits for them all.
    fn flush_tables(&self, tables: &[Arc<Table>]) -> Result<(), Error> {
        let mut waits: Vec<(&str, FlushCompletion)> = Vec::new();
        for table in tables {
            for completion in table.request_flushes(self.manager(table))? {
                waits.push((table.name(), completion));
            }
        }
        let mut first = None;
        for (table, completion) in waits {
            if let Err(source) = completion.wait()
                && first.is_none()
            {
                // The flush directories, or else the data directories, are
                // where flushes write: the first is named when the error's
                // chain names no file.
                let fallback = self
                    .config
                    .flush_dirs
                    .first()
                    .or(self.config.data_dirs.first())
                    .map_or_else(std::path::PathBuf::new, Clone::clone);
                first = Some(Error::flush(table, &fallback, source));
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// A major compaction of `table`: all its sstables not being compacted
    /// already go into one job (per table directory). Waits for it.
    ///
    /// # Errors
    /// [`Error::UnknownTable`], [`Error::Closed`], [`Error::Compaction`]
    /// if the job failed or was stopped by `close` (its inputs stay),
    /// [`Error::DiskFull`] naming the directory if it failed because the
    /// disk was full.
    pub fn compact(&self, table: &str) -> Result<(), Error> {
        let _pass = self.enter("compact")?;
        let t = self.lookup(table)?;
        t.sstables.major(table)
    }

    /// Figures of every table and of the database.
    pub fn metrics(&self) -> DatabaseMetrics {
        let tables: Vec<TableMetrics> = self.tables.all().iter().map(|t| t.metrics()).collect();
        let pool = self.pool.stats();
        DatabaseMetrics {
            cache: self
                .cache_total(tables.iter().filter_map(|t| t.cache.clone()))
                .unwrap_or_default(),
            pool_limit: self.pool.memory_limit(),
            pool_used: pool.used_bytes(),
            pool_system_bytes: pool.system_bytes,
            pool_bytes_evicted: pool.bytes_evicted,
            pool_allocation_failures: pool.allocation_failures,
            sstable_bytes_written: tables.iter().map(|t| t.sstable_bytes_written).sum(),
            tables,
            user: self.user.metrics(),
            system: self.system.metrics(),
            devices: self.devices.stats(),
            failed_permanently: self
                .router
                .failed_permanently
                .lock()
                .iter()
                .map(|(region, e)| format!("{region}: {e}"))
                .collect(),
            commitlog: self.log().map(|log| log.stats()),
            compaction: self.compaction.metrics(),
        }
    }

    /// Closes the database: refuses new operations, waits for those in
    /// progress, flushes every memtable, stops the dirty-memory managers
    /// and the flush scheduler's threads, and releases the directory
    /// locks. A second call does nothing.
    ///
    /// # Errors
    /// [`Error::Flush`] if a memtable could not be flushed: everything is
    /// stopped and released anyway, and that memtable's writes are lost.
    pub fn close(&self) -> Result<(), Error> {
        if !self.gate.close() {
            return Ok(());
        }
        // Compactions stop first (inputs intact, partial outputs removed),
        // leaving the disk to the last flushes.
        self.compaction.manager.close();
        let tables: Vec<Arc<Table>> = self.tables.all();
        let flushed = self.flush_tables(&tables);
        self.stop_flushing();
        // The caches are of no more use: their memory goes back to the
        // pool (each region goes with its table).
        for table in &tables {
            if let Some(cache) = &table.cache {
                cache.clear();
            }
        }
        // Flushes are over: the log syncs, retires what they made durable,
        // and stops.
        let logged = self
            .log()
            .map_or(Ok(()), CommitLog::close)
            .map_err(Error::commit_log);
        self.locks.lock().clear();
        flushed.and(logged)
    }

    /// Stops the flush machinery, for `close` and `crash`: first the
    /// policy (it waits for flushes in flight, which need the executor),
    /// then the executor (a job it still held is handed back and dropped,
    /// which fails its flush and keeps its memtable).
    fn stop_flushing(&self) {
        self.user.shutdown();
        self.system.shutdown();
        drop(self.scheduler.shutdown());
    }

    /// The user tables' dirty-memory figures alone (cheaper than
    /// [`metrics`](Self::metrics)).
    pub fn user_metrics(&self) -> DirtyMemoryMetrics {
        self.user.metrics()
    }

    /// Where writes spent their time, phase by phase, summed over the
    /// tables (cheaper than [`metrics`](Self::metrics)): a pause in which
    /// no write completed shows as one phase's maximum.
    pub fn write_phases(&self) -> WritePhases {
        self.tables
            .all()
            .iter()
            .fold(WritePhases::default(), |sum, t| {
                sum.sum(&t.counters.phases.get())
            })
    }

    /// The row caches' figures summed over the tables that have one
    /// (cheaper than [`metrics`](Self::metrics)); `None` if no table has a
    /// cache.
    pub fn cache_metrics(&self) -> Option<CacheMetrics> {
        let per_table: Vec<CacheMetrics> = self
            .tables
            .all()
            .iter()
            .filter_map(|t| t.cache_metrics())
            .collect();
        self.cache_total(per_table.into_iter())
    }

    /// The tables' cache figures summed, with the memory of the one
    /// region they share counted once; `None` if no table has a cache.
    fn cache_total(&self, per_table: impl Iterator<Item = CacheMetrics>) -> Option<CacheMetrics> {
        let mut per_table = per_table.peekable();
        per_table.peek()?;
        let mut total = per_table.fold(CacheMetrics::default(), |sum, c| sum.sum(&c));
        if let Some(tracker) = &self.cache_tracker {
            total.region_bytes = tracker.stats().region.footprint_bytes() as u64;
        }
        Some(total)
    }

    /// Each modelled device's counters (cheaper than
    /// [`metrics`](Self::metrics)); empty without a device model.
    pub fn device_stats(&self) -> Vec<device::DeviceStats> {
        self.devices.stats()
    }

    /// The commit log's counters, if there is one (cheaper than
    /// [`metrics`](Self::metrics)).
    pub fn commitlog_stats(&self) -> Option<LogStats> {
        self.log().map(|log| log.stats())
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.gate.is_closed()
    }

    /// Installs (or, with `None`, removes) the test hook, called at each
    /// [`HookPoint`](crate::HookPoint) of every table (feature `testing`).
    #[cfg(feature = "testing")]
    pub fn set_test_hook(&self, hook: Option<Arc<crate::TestHook>>) {
        self.router.hooks.set(hook);
    }

    /// Stops the database as a crash would, flushing nothing: memtables
    /// are dropped, the commit log keeps what it was given (feature
    /// `testing`).
    #[cfg(feature = "testing")]
    pub fn crash(self) {
        self.gate.close();
        self.compaction.manager.close();
        self.stop_flushing();
        // What the log was given is written out, as a process that dies
        // leaves its page-cache writes behind (the drop did this before).
        if let Some(log) = self.log() {
            drop(log.close());
        }
        self.locks.lock().clear();
        // Drop finds the gate closed and does nothing more.
    }

    /// [`get`](Self::get), building a reader of every memtable and of the
    /// row cache even where the source knows it holds nothing (no
    /// `make_reader_opt`): the baseline of the `cache` bench (feature
    /// `testing`).
    ///
    /// # Errors
    /// As [`get`](Self::get).
    #[cfg(feature = "testing")]
    pub fn get_building_every_reader(
        &self,
        table: &str,
        key: &DecoratedKey,
        slice: ClusteringRange,
    ) -> Result<Option<Mutation>, Error> {
        let _pass = self.enter("get")?;
        let t = self.lookup(table)?;
        let mut reader = t.make_reader_always(PartitionRange::single_key(key.clone()), slice)?;
        Ok(reader.next_mutation()?)
    }

    /// Evicts up to `n` of `table`'s least recently cached partitions, as
    /// the pool's reclaim would (feature `testing`); returns how many went
    /// (0 for a table without a cache).
    ///
    /// # Errors
    /// [`Error::UnknownTable`], [`Error::Closed`].
    #[cfg(feature = "testing")]
    pub fn evict_cache(&self, table: &str, n: usize) -> Result<usize, Error> {
        let _pass = self.enter("evict_cache")?;
        Ok(self.lookup(table)?.cache.as_ref().map_or(0, |c| c.evict(n)))
    }

    /// Makes every compaction job from now on stop right after step `step`
    /// of its replacement, leaving the files as a crash at that point
    /// would (`None`: run normally; feature `testing`). See the
    /// compaction crate's `JobOptions::stop_after` for the steps.
    #[cfg(feature = "testing")]
    pub fn set_compaction_stop_after(&self, step: Option<usize>) {
        self.compaction.set_stop_after(step);
    }

    /// Test hook: the next `n` flushes fail in their sstable write.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn fail_next_flushes(&self, n: u64) {
        self.router.faults.fail_next(n);
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        // Not closed by its owner: flush and stop the threads anyway.
        let _ = self.close();
    }
}

/// Reads partition `key` of `t` restricted to `slice` (see
/// [`Database::get`]).
fn read_partition(
    t: &Table,
    key: &DecoratedKey,
    slice: ClusteringRange,
) -> Result<Option<Mutation>, Error> {
    let mut reader = t.make_reader(PartitionRange::single_key(key.clone()), slice)?;
    Ok(reader.next_mutation()?)
}

/// Checks what the builder cannot guarantee of a mutation (merging
/// mutations can grow one past the limits) and what a write needs; the
/// sizes measured go on with the write (the commit log frames the entry
/// by its encoded length, the table counts its size bound).
fn check_mutation<'m>(table: &str, m: &'m Mutation) -> Result<limits::Checked<'m>, Error> {
    if m.is_empty() {
        return Err(Error::InvalidMutation {
            table: table.to_owned(),
            key: m.key().to_string(),
            reason: "it holds nothing to write (no tombstone, row or cell)",
        });
    }
    // The one size check of `mutation` (the builder's), again: a mutation
    // may have been merged past the limits since it was built.
    limits::check(m).map_err(|e| {
        let (what, size, limit) = match e {
            mutation::Error::CellValueTooLarge { len, limit } => ("cell value", len, limit),
            mutation::Error::MutationTooLarge { size, limit, .. } => ("mutation", size, limit),
            _ => ("mutation", limits::size_bound(m), limits::MAX_MUTATION_SIZE),
        };
        Error::MutationTooLarge {
            table: table.to_owned(),
            key: m.key().to_string(),
            what,
            size,
            limit,
        }
    })
}
