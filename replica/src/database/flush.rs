//! The flush path: dirty-memory's [`FlushTarget`] wired to the flush
//! scheduler.
//!
//! `dirty-memory` decides when and what to flush and is the only layer
//! that retries (with a doubling back-off); the flush scheduler only runs
//! the job's phases; this module does the table's part:
//!
//! * [`FlushRouter::start_flush`] gets the memtable and its table from the
//!   flush itself ([`FlushSubject`], attached to the memtable's region when
//!   the memtable was made), installs a fresh active memtable in the table,
//!   seals the old one, and submits a [`FlushMemtable`] job.
//! * Its data phase first waits while the table's compactions fall
//!   behind (`flush_throttle`: too many sorted runs), then streams the
//!   sealed memtable into an sstable writer in
//!   the table's directory under the flush directory the scheduler chose,
//!   reports the region bytes emitted to `Flush::account_written` as it
//!   goes, and calls `Flush::data_written` once the data is written, so
//!   the next flush may start while this one's tail (index, summary,
//!   fsyncs, renames: the commit) runs on a tail worker.
//! * Its tail phase commits the sstable and adds it to the table's set;
//!   then its `publish` step (the scheduler's, on the tail worker) puts
//!   the memtable's data into the row cache, if the table has one (the
//!   memtable out of the dirty-memory group, its bytes pinned against the
//!   real limit and released as the update passes its partitions). On
//!   success (`complete`) the memtable is retired from its
//!   list (`memtable_list`'s protocol: a reader meanwhile sees the row in
//!   the memtable, the sstable or both, never neither), its open readers
//!   are handed over to the sstable (`mark_flushed`), and the flush
//!   finishes, giving the commit log back the entries the memtable held. On failure the memtable stays
//!   sealed in the list, readable, and the flush fails: transiently (I/O;
//!   dirty-memory retries it) or permanently (data the sstable format
//!   refuses; reported once, kept in memory).

use std::fmt;

use commitlog::CommitLog;
use dirty_memory::{DirtyMemoryManager, Flush, FlushTarget};
use flush_scheduler::{FlushContext, FlushJob, FlushScheduler};
use memtable::ReplacementSource;
use mutation::FragmentReader;
use region_group::{RegionGroup, RegionId, RegionListener};
use sstable::{Sstable, Writer, WriterOptions};

use crate::database::read::TableSstable;
use crate::database::table::{Table, TableMemtable};
use crate::devices::Devices;
use crate::layout::table_dir;
use crate::sync::{Arc, Mutex, OnceLock, Ordering, Weak};

/// What a memtable's region carries for its flush
/// ([`Flush::subject`](dirty_memory::Flush::subject)): the memtable and its
/// table, weakly, so the region group holds neither alive (the table's
/// memtable list is what holds a memtable).
///
/// The dirty-memory managers and their groups are typed by it
/// ([`Manager`], [`MemtableGroup`]): a flush hands its target this, with no
/// registry from region ids and no cast.
#[derive(Debug)]
pub(crate) struct FlushSubject {
    pub(crate) table: Weak<Table>,
    pub(crate) memtable: Weak<TableMemtable>,
}

/// The dirty-memory manager of the database's memtables, whose flushes
/// carry a [`FlushSubject`].
pub(crate) type Manager = DirtyMemoryManager<FlushSubject>;

/// The region group of a manager's memtables ([`Manager::group`]).
pub(crate) type MemtableGroup = RegionGroup<FlushSubject>;

impl FlushSubject {
    /// The table and memtable, while both are still there.
    fn upgrade(&self) -> Option<(Arc<Table>, Arc<TableMemtable>)> {
        Some((self.table.upgrade()?, self.memtable.upgrade()?))
    }
}

/// The database's commit log, set once it is open and replayed (empty
/// without one): writes append to it and flushes tell it what they made
/// durable, each with one atomic load (no lock: the log is set once and
/// closed in place, `CommitLog::close(&self)`).
pub(crate) type LogSlot = OnceLock<Arc<CommitLog>>;

/// Test hook: makes the next flushes fail in the middle of their sstable
/// write, as a failing disk would. Unit tests only: nothing of it is in a
/// normal build.
#[cfg(all(test, not(loom)))]
#[derive(Debug, Default)]
pub(crate) struct FlushFaults {
    remaining: crate::sync::AtomicU64,
}

#[cfg(all(test, not(loom)))]
impl FlushFaults {
    /// Makes the next `n` flush data phases fail.
    pub(crate) fn fail_next(&self, n: u64) {
        self.remaining.store(n, Ordering::SeqCst);
    }

    /// Whether this flush must fail (taking one from the count).
    fn take(&self) -> bool {
        self.remaining
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }
}

/// The injected failure of [`FlushFaults`].
#[cfg(all(test, not(loom)))]
#[derive(Debug, thiserror::Error)]
#[error("injected failure of an sstable write (test hook)")]
struct InjectedFailure;

/// The `FlushTarget` of both dirty-memory managers (user and system
/// tables).
pub(crate) struct FlushRouter {
    pub(crate) log: Arc<LogSlot>,
    scheduler: Arc<FlushScheduler>,
    options: WriterOptions,
    devices: Arc<Devices>,
    #[cfg(all(test, not(loom)))]
    pub(crate) faults: FlushFaults,
    #[cfg(feature = "testing")]
    pub(crate) hooks: crate::hooks::Hooks,
    /// Memtables whose flush failed permanently, with the error.
    pub(crate) failed_permanently: Mutex<Vec<(RegionId, String)>>,
}

impl fmt::Debug for FlushRouter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FlushRouter").finish_non_exhaustive()
    }
}

impl FlushRouter {
    pub(crate) fn new(
        scheduler: Arc<FlushScheduler>,
        options: WriterOptions,
        devices: Arc<Devices>,
    ) -> Self {
        FlushRouter {
            log: Arc::new(OnceLock::new()),
            scheduler,
            options,
            devices,
            #[cfg(all(test, not(loom)))]
            faults: FlushFaults::default(),
            #[cfg(feature = "testing")]
            hooks: crate::hooks::Hooks::default(),
            failed_permanently: Mutex::new(Vec::new()),
        }
    }
}

impl FlushTarget<FlushSubject> for FlushRouter {
    fn start_flush(&self, flush: Flush<FlushSubject>) {
        // The flush carries its memtable and table (attached to the
        // memtable's region when it was made: `Table::new_memtable`).
        let Some((table, memtable)) = flush.subject().and_then(|s| s.upgrade()) else {
            // The memtable left (its table was dropped, or it was flushed
            // already): nothing to write.
            flush.finish();
            return;
        };
        // Install the fresh memtable before sealing the old one, so a writer
        // refused by the seal finds it (see `memtable_list`).
        let fresh = || table.new_memtable();
        let installed = || {
            #[cfg(feature = "testing")]
            self.hooks
                .fire(crate::hooks::HookPoint::FlushInstalledFresh);
        };
        match table.list.begin_flush(&memtable, fresh, installed) {
            Ok(unused) => {
                if let Some(unused) = unused {
                    unused.detach_from_region_group();
                }
            }
            Err(e) => {
                // Not sealed: writes continue in it. Grounded, as the
                // contract asks; the retry tries again.
                flush.group().ground_evictable(flush.region());
                flush.fail(e);
                return;
            }
        }
        let job = FlushMemtable {
            flush,
            table,
            memtable,
            log: Arc::clone(&self.log),
            options: self.options.clone(),
            devices: Arc::clone(&self.devices),
            #[cfg(all(test, not(loom)))]
            fail: self.faults.take(),
            writer: None,
            committed: None,
            permanent: false,
            cached: false,
            flushed_bytes: None,
        };
        // After shutdown the job comes back; dropping it drops the `Flush`,
        // which fails the flush and keeps the memtable.
        drop(self.scheduler.submit(Box::new(job)));
    }

    fn flush_failed_permanently(&self, region: RegionId, error: &dirty_memory::Error) {
        self.failed_permanently
            .lock()
            .push((region, error.to_string()));
    }
}

/// How much memtable memory a flush writes out between its reports to
/// dirty-memory (`Flush::account_written`). Each report takes the region
/// group's lock, database-wide, three times; reported per row, that was
/// three database-wide acquisitions per row flushed. Writers held at the
/// hard limit are let in at most this much later than a per-row report
/// would (a flush of 1 KiB rows: one report per 64 rows).
const ACCOUNT_STEP: usize = 64 << 10;

/// One memtable's flush, as a flush-scheduler job.
struct FlushMemtable {
    flush: Flush<FlushSubject>,
    table: Arc<Table>,
    memtable: Arc<TableMemtable>,
    log: Arc<LogSlot>,
    options: WriterOptions,
    /// Which device each flush directory is on.
    devices: Arc<Devices>,
    /// Fail the data phase after its first fragment (test hook).
    #[cfg(all(test, not(loom)))]
    fail: bool,
    /// The writer between the data and tail phases.
    writer: Option<Writer>,
    /// The committed sstable, after the tail phase.
    committed: Option<Arc<TableSstable>>,
    /// The failure is permanent: the sstable format refuses the data.
    permanent: bool,
    /// `publish` put the memtable's data into the row cache (the memtable
    /// left its region group for it).
    cached: bool,
    /// The memtable's footprint when `publish` began (a cache update by
    /// merge takes its region).
    flushed_bytes: Option<usize>,
}

impl FlushMemtable {
    fn sstable_error(&mut self, e: sstable::Error) -> flush_scheduler::Error {
        self.permanent = matches!(
            e,
            sstable::Error::TooLarge { .. } | sstable::Error::InvalidStream { .. }
        );
        flush_scheduler::Error::job_failed(e)
    }
}

impl FlushJob for FlushMemtable {
    fn write_data(&mut self, ctx: &FlushContext<'_>) -> Result<(), flush_scheduler::Error> {
        if self.memtable.is_empty() {
            self.flush.account_written(usize::MAX);
            self.flush.data_written();
            return Ok(());
        }
        // While the table's compactions fall behind, the flush waits for
        // them (and so do the writers, at the dirty-memory limits): see
        // `flush_throttle`.
        self.table.sstables.throttle_flush(|| {
            #[cfg(feature = "testing")]
            self.table
                .hooks
                .fire(crate::hooks::HookPoint::FlushHeldForCompaction);
        });
        let dir = table_dir(ctx.dir(), self.table.name());
        // Every byte of the sstable is charged to the flush directory's
        // device as the writer writes it (in this thread, holding only the
        // data-write permit, which is the point of a slow disk). The writer
        // comes from the table's set: its generation is unique across the
        // set's directories (a flush directory and its data directory).
        let mut options = self.options.clone();
        options.device = self.devices.for_path(&dir);
        let mut writer = match self.table.sstables.create_writer(&dir, options) {
            Ok(w) => w,
            Err(compaction::Error::Sstable(e)) => return Err(self.sstable_error(e)),
            Err(e) => return Err(flush_scheduler::Error::job_failed(e)),
        };
        let mut reader = self.memtable.memtable().make_flush_reader(|_| {});
        let mut reported = 0;
        loop {
            let fragment = reader.next().map_err(flush_scheduler::Error::job_failed)?;
            let Some(fragment) = fragment else { break };
            if let Err(e) = writer.write(&fragment) {
                return Err(self.sstable_error(e));
            }
            #[cfg(all(test, not(loom)))]
            if self.fail {
                // The writer is dropped: its files are removed.
                return Err(flush_scheduler::Error::job_failed(InjectedFailure));
            }
            // In steps of `ACCOUNT_STEP`: each report takes the group's
            // lock three times (the last step goes with `usize::MAX`).
            let progress = reader.progress_bytes();
            if progress >= reported + ACCOUNT_STEP {
                self.flush.account_written(progress - reported);
                reported = progress;
            }
        }
        self.flush.account_written(usize::MAX);
        self.flush.data_written();
        self.writer = Some(writer);
        Ok(())
    }

    fn write_tail(&mut self, _ctx: &FlushContext<'_>) -> Result<(), flush_scheduler::Error> {
        let Some(writer) = self.writer.take() else {
            return Ok(());
        };
        let bytes = writer.bytes_written();
        let committed = match writer.commit() {
            Ok(c) => c,
            Err(e) => return Err(self.sstable_error(e)),
        };
        let device = self.devices.for_path(&committed.dir);
        let sstable = match Sstable::open_with(
            &committed.dir,
            committed.generation,
            device,
            &self.options.fs,
        ) {
            Ok(s) => s,
            Err(e) => {
                // Committed but not in the set: removed, or the next start
                // would find it, and by then compaction may have purged
                // the tombstones that shadow its rows (a deleted row would
                // return). The memtable stays and is flushed again.
                let _ = sstable::remove_committed(
                    &self.options.fs,
                    &committed.dir,
                    committed.generation,
                );
                return Err(self.sstable_error(e));
            }
        };
        // Readable (and seen by compaction) from now on, before the
        // memtable leaves the list.
        let handle = self
            .table
            .sstables
            .add(&committed.dir, sstable)
            .map_err(flush_scheduler::Error::job_failed)?;
        self.table
            .counters
            .sstable_bytes_written
            .fetch_add(bytes, Ordering::Relaxed);
        self.committed = Some(Arc::new(TableSstable { handle }));
        Ok(())
    }

    /// With a cache (ScyllaDB #1942), the cache takes the memtable's data
    /// while its memory is still accounted as dirty; only then (in
    /// `complete`) the memtable leaves its list. The sstable is in the
    /// table's set already (`write_tail`), the memtable still listed:
    /// readers see its rows in both and reconcile them. A failed update is
    /// counted, not returned (`Table::update_cache`): the flush stands.
    fn publish(&mut self, _ctx: &FlushContext<'_>) -> Result<(), flush_scheduler::Error> {
        let table = &self.table;
        if table.cache.is_none()
            || self.committed.is_none()
            || table.dropped.load(Ordering::Relaxed)
        {
            return Ok(());
        }
        #[cfg(feature = "testing")]
        table
            .hooks
            .fire(crate::hooks::HookPoint::FlushBeforeCacheUpdate);
        // The memtable leaves the dirty-memory accounting now, its bytes
        // pinned against the real limit instead and released as the update
        // passes its partitions (ScyllaDB's real-dirty pinning): held whole
        // until the update's end, they kept every writer at the real limit
        // for the whole update (170-820 ms a flush on the README's run).
        let pin = self.flush.group().pin_on_leave(self.flush.region()).ok();
        self.memtable.detach_from_region_group();
        // The update may take the memtable's region (a merge): its size is
        // taken first.
        self.flushed_bytes = Some(self.memtable.stats().region.footprint_bytes());
        table.update_cache(&self.memtable, pin);
        self.cached = true;
        Ok(())
    }

    fn complete(self: Box<Self>, outcome: Result<(), flush_scheduler::Error>) {
        let FlushMemtable {
            flush,
            table,
            memtable,
            log,
            committed,
            permanent,
            cached,
            flushed_bytes,
            ..
        } = *self;
        match outcome {
            Ok(()) => {
                let size =
                    flushed_bytes.unwrap_or_else(|| memtable.stats().region.footprint_bytes());
                // The sstable is in the table's set already (`write_tail`),
                // and, with a cache, the cache holds the memtable's data
                // (`publish`): the memtable leaves its list now.
                table.list.retire(&memtable);
                if let Some(sstable) = committed {
                    let replacement: Arc<dyn ReplacementSource> = sstable;
                    memtable.mark_flushed(replacement);
                }
                let c = &table.counters;
                c.flushes.fetch_add(1, Ordering::Relaxed);
                c.flushed_memtable_bytes
                    .fetch_add(size as u64, Ordering::Relaxed);
                let positions = memtable.take_positions();
                let log = log.get().cloned();
                // Only queues: a flush never waits for compaction. Before
                // the flush is reported finished, so the check is queued
                // when a waiter of the flush returns.
                table.sstables.submit();
                flush.finish_releasing(move || {
                    // The memory first: writers held at the hard limit go
                    // on at once. Then the log lets go of exactly the
                    // entries this memtable held (writers still applying
                    // to it hand theirs back themselves, see
                    // `TableMemtable`), before the flush is reported
                    // finished. Letting go may remove dozens of segments,
                    // and on a file system that discards freed blocks at
                    // once each removal took 20-40 ms: done first, it kept
                    // every writer waiting on memory already flushed.
                    // (With a cache it left before the update, its bytes
                    // pinned, released as the update went.)
                    if !cached {
                        memtable.detach_from_region_group();
                    }
                    // Its segments go back to the pool now too (unless a
                    // reader still holds it): released from the accounting
                    // but kept through the log's work, they let the pool
                    // grow by a memtable beyond the budget (issue 19's
                    // memory shape: 268-280 MiB of pool for a 256 MiB
                    // budget).
                    drop(memtable);
                    #[cfg(feature = "testing")]
                    table
                        .hooks
                        .fire(crate::hooks::HookPoint::FlushBeforeLogDiscard);
                    if let Some(log) = log {
                        log.discard_flushed(table.id, &positions);
                    }
                });
            }
            Err(e) if permanent => flush.fail_permanently(e),
            Err(e) => flush.fail(e),
        }
    }
}
