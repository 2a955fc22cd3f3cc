//! One open table: its memtable list over its sstables, how a write reaches
//! the active memtable, how a read merges every source, and its counters.

use std::fmt;
use std::time::{Duration, Instant};

use commitlog::{CommitLog, ReplayPosition, ReplayPositionSet, TableId};

use compaction::SstableHandle;
use dirty_memory::{DirtyMemoryManager, FlushCompletion};
use logalloc::SegmentPool;
use memtable::{Memtable, ReplacementSource};
use mutation::{
    ClusteringRange, Fragment, FragmentReader, MergingReader, Mutation, PartitionRange, limits,
};
use region_group::{RealPin, RegionGroup};
use row_cache::{CacheStats, RowCache, UnderlyingSource};

use crate::catalog::TableSchema;
use crate::database::sstables::{PinnedSstables, TableCompactionMetrics, TableSstables};
use crate::database::flush::FlushSubject;
use crate::database::memtable_list::{Attempt, Logged, MemtableList, ReadSources};
use crate::database::phases::{PhaseCounters, WritePhases};
use crate::error::Error;
use crate::sync::{Arc, AtomicBool, AtomicU64, Ordering, Weak};

/// A memtable of a table, with the commit-log entries it holds.
pub(crate) type TableMemtable = Logged<Memtable>;

/// An open sstable of a table. It is also the replacement source that
/// readers of the memtable it was flushed from continue in.
#[derive(Debug)]
pub(crate) struct TableSstable {
    /// The sstable in its set (the handle pins its files for the
    /// memtable's readers, whatever compaction does with it).
    pub(crate) handle: SstableHandle,
}

impl ReplacementSource for TableSstable {
    fn make_reader(
        &self,
        range: PartitionRange,
        slice: ClusteringRange,
    ) -> Result<Box<dyn FragmentReader + Send>, mutation::Error> {
        match self.handle.sstable().make_reader_opt(&range, Some(slice)) {
            Ok(Some(reader)) => Ok(Box::new(reader)),
            Ok(None) => Ok(Box::new(mutation::from_mutations(Vec::new()))),
            Err(e) => Err(mutation::Error::Source(Box::new(e))),
        }
    }
}

/// A table's sstables as its row cache reads through to them: the table,
/// weakly (the cache is the table's), so every read pins the table's sets
/// as they are then (sstables added by flushes, replaced by compaction).
pub(crate) struct CacheSource {
    pub(crate) table: Weak<Table>,
}

/// A read of the pinned sstables for the cache: the pin lives as long as
/// the read.
struct PinnedRead {
    merged: MergingReader<Box<dyn FragmentReader + Send>>,
    _pinned: PinnedSstables,
}

impl FragmentReader for PinnedRead {
    fn next(&mut self) -> Result<Option<Fragment>, mutation::Error> {
        self.merged.next()
    }

    fn fast_forward_to(&mut self, range: PartitionRange) -> Result<(), mutation::Error> {
        self.merged.fast_forward_to(range)
    }

    fn next_partition(&mut self) -> Result<(), mutation::Error> {
        self.merged.next_partition()
    }
}

impl UnderlyingSource for CacheSource {
    fn make_reader(
        &self,
        range: PartitionRange,
        slice: ClusteringRange,
    ) -> Result<Box<dyn FragmentReader + Send>, mutation::Error> {
        let Some(table) = self.table.upgrade() else {
            // The table is gone (dropped or closed): nothing to read.
            return Ok(Box::new(mutation::from_mutations(Vec::new())));
        };
        let pinned = table.sstables.pin();
        let mut readers: Vec<Box<dyn FragmentReader + Send>> = Vec::new();
        for handle in pinned.handles() {
            let reader = handle
                .sstable()
                .make_reader_opt(&range, Some(slice.clone()))
                .map_err(|e| mutation::Error::Source(Box::new(e)))?;
            if let Some(reader) = reader {
                readers.push(Box::new(reader));
            }
        }
        table.sstables.note_read(readers.len());
        Ok(Box::new(PinnedRead {
            merged: MergingReader::new(readers),
            _pinned: pinned,
        }))
    }
}

/// A table's counters (statistics only: they order nothing).
#[derive(Debug, Default)]
pub(crate) struct TableCounters {
    pub(crate) writes: AtomicU64,
    pub(crate) flushes: AtomicU64,
    pub(crate) flushed_memtable_bytes: AtomicU64,
    pub(crate) sstable_bytes_written: AtomicU64,
    pub(crate) blocked_nanos: AtomicU64,
    /// Cache updates at flush that failed (the cache dropped what it
    /// missed; the flush succeeded).
    pub(crate) cache_update_failures: AtomicU64,
    /// Where writes spent their time.
    pub(crate) phases: PhaseCounters,
}

/// One open table.
pub(crate) struct Table {
    pub(crate) schema: TableSchema,
    /// The table's id in the commit log.
    pub(crate) id: TableId,
    /// The memtables.
    pub(crate) list: MemtableList<TableMemtable>,
    /// The table's sstables, one compacted set per directory.
    pub(crate) sstables: TableSstables,
    /// The row cache in front of the sstables (`None`: off for the
    /// database or the table); in the memtables' pool, outside the
    /// dirty-memory group.
    pub(crate) cache: Option<RowCache>,
    /// The region group of the dirty-memory manager its memtables join.
    pub(crate) group: Arc<RegionGroup>,
    pub(crate) pool: Arc<SegmentPool>,
    pub(crate) dropped: AtomicBool,
    pub(crate) counters: TableCounters,
    #[cfg(feature = "testing")]
    pub(crate) hooks: crate::hooks::Hooks,
}

impl fmt::Debug for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Table")
            .field("name", &self.schema.name())
            .field("memtables", &self.list.count())
            .finish_non_exhaustive()
    }
}

/// A row cache's figures (of one table, or summed over the tables).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheMetrics {
    /// Partitions (and known-empty answers) served from the cache.
    pub hits: u64,
    /// Partitions or gaps read through to the sstables.
    pub misses: u64,
    /// Reads whose result entered the cache.
    pub populations: u64,
    /// Partitions evicted (by the pool's reclaim or the cache share, which
    /// take the least recently used partitions of every table's cache).
    pub evictions: u64,
    /// Flushed partitions merged into cached ones or inserted.
    pub updated_partitions: u64,
    /// Cache updates at flush that failed (the cache dropped what it
    /// missed; the flush itself succeeded).
    pub update_failures: u64,
    /// Bytes of encoded partitions cached now.
    pub bytes: u64,
    /// Memory the caches' region holds now (segment bytes). Every table's
    /// cache is in the one region of the database's cache tracker, so a
    /// table's figure is the region's, the same for every table; the
    /// database's total counts it once.
    pub region_bytes: u64,
    /// Partitions cached now.
    pub partitions: u64,
}

impl CacheMetrics {
    fn from_stats(s: &CacheStats, update_failures: u64) -> Self {
        CacheMetrics {
            hits: s.hits,
            misses: s.misses,
            populations: s.populations,
            evictions: s.evictions,
            updated_partitions: s.update_merged + s.update_inserted,
            update_failures,
            bytes: s.stored_bytes as u64,
            region_bytes: s.region.footprint_bytes() as u64,
            partitions: s.partitions as u64,
        }
    }

    /// `hits / (hits + misses)`, or 0 before any read.
    pub fn hit_ratio(&self) -> f64 {
        let total = self.hits + self.misses;
        if total == 0 {
            0.0
        } else {
            self.hits as f64 / total as f64
        }
    }

    /// `self` plus `other`, field by field (`region_bytes` too: for the
    /// caches of one database, which share one region, take the region's
    /// figure once instead, as
    /// [`Database::cache_metrics`](crate::Database::cache_metrics) does).
    pub fn sum(&self, other: &CacheMetrics) -> CacheMetrics {
        CacheMetrics {
            hits: self.hits + other.hits,
            misses: self.misses + other.misses,
            populations: self.populations + other.populations,
            evictions: self.evictions + other.evictions,
            updated_partitions: self.updated_partitions + other.updated_partitions,
            update_failures: self.update_failures + other.update_failures,
            bytes: self.bytes + other.bytes,
            region_bytes: self.region_bytes + other.region_bytes,
            partitions: self.partitions + other.partitions,
        }
    }
}

/// Figures of one table, from [`Database::metrics`](crate::Database::metrics).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableMetrics {
    /// The table's name.
    pub name: String,
    /// Memtables: the active one and the sealed ones being flushed.
    pub memtables: usize,
    /// Sstables.
    pub sstables: usize,
    /// Real dirty memory: what the table's memtables hold (segment bytes).
    pub real_dirty: usize,
    /// Unspooled dirty memory: real dirty minus what flushes in progress
    /// have written out.
    pub unspooled_dirty: usize,
    /// Writes applied.
    pub writes: u64,
    /// Flushes completed.
    pub flushes: u64,
    /// Memtable memory those flushes wrote out (their sizes, summed).
    pub flushed_memtable_bytes: u64,
    /// Sstable bytes those flushes wrote (Data and Index, after compression).
    pub sstable_bytes_written: u64,
    /// Time writes to this table spent waiting for dirty memory, summed
    /// over writers.
    pub writers_blocked: Duration,
    /// Where the table's writes spent their time, phase by phase.
    pub write_phases: WritePhases,
    /// The table's row cache, `None` if it has none.
    pub cache: Option<CacheMetrics>,
    /// Compaction: live bytes, jobs, sstables replaced and written, user
    /// bytes, sstables consulted per read.
    pub compaction: TableCompactionMetrics,
}

impl Table {
    /// The table's name.
    pub(crate) fn name(&self) -> &str {
        self.schema.name()
    }

    /// A new, empty memtable in the table's group, whose flushes carry it
    /// and the table.
    pub(crate) fn new_memtable(self: &Arc<Self>) -> Result<Arc<TableMemtable>, Error> {
        let memtable =
            Memtable::new(&self.group, &self.pool).map_err(|source| Error::Memtable {
                table: self.name().to_owned(),
                source,
            })?;
        let memtable = Logged::new(memtable);
        self.attach_flush_subject(&memtable);
        Ok(memtable)
    }

    /// Attaches the table and `memtable` to the memtable's region, for its
    /// flushes to carry ([`FlushSubject`]).
    pub(crate) fn attach_flush_subject(self: &Arc<Self>, memtable: &Arc<TableMemtable>) {
        let subject = FlushSubject {
            table: Arc::downgrade(self),
            memtable: Arc::downgrade(memtable),
        };
        // The memtable's region was created in the group: it is there.
        let attached = self
            .group
            .set_region_owner(memtable.region_id(), Arc::new(subject));
        debug_assert!(attached, "a new memtable's region reports to its group");
    }

    /// Appends `m` to the commit log (if there is one), then applies it to
    /// the active memtable once `manager` admits the write (waiting at
    /// most `timeout` at the hard limit). A write that raced a flush's seal
    /// goes to the new active memtable, with the same log entry.
    ///
    /// The log append comes before the admission wait so that writers
    /// share its syncs (group commit) instead of taking turns; a write
    /// that then fails (times out, the database closes) hands its entry
    /// back to the log at once. It is still in the log, and may come back
    /// at replay, as a timed-out write may in Cassandra.
    ///
    /// `m` was checked ([`limits::check`]) by the caller, which measured it
    /// once: the log frames it by the encoded length measured, the
    /// table's counters take the size bound.
    pub(crate) fn apply(
        &self,
        manager: &DirtyMemoryManager,
        m: limits::Checked<'_>,
        timeout: Duration,
        log: Option<&CommitLog>,
    ) -> Result<(), Error> {
        let entered = Instant::now();
        let logged = match log {
            Some(log) => {
                let added = log.add(self.id, m);
                self.counters.phases.log_append.record(entered.elapsed());
                Some((log, added.map_err(|source| Error::CommitLog { source })?))
            }
            None => None,
        };
        self.apply_to_memtable(
            manager,
            m.mutation(),
            m.size_bound(),
            logged,
            entered,
            timeout,
        )
    }

    /// Applies `m`, read back from the commit log at open, as
    /// [`apply`](Self::apply) applies a write, without appending it to the
    /// log again (the replayed entry stays where it is until the flush after
    /// replay) and without the size check (it passed one when it was
    /// written).
    pub(crate) fn apply_replayed(
        &self,
        manager: &DirtyMemoryManager,
        m: &Mutation,
        timeout: Duration,
    ) -> Result<(), Error> {
        let size_bound = limits::size_bound(m);
        self.apply_to_memtable(manager, m, size_bound, None, Instant::now(), timeout)
    }

    /// The part of a write after its log append (`logged`: the log and the
    /// entry's position, if there is a log): admission, the apply to the
    /// active memtable (again to the new one if a flush sealed it), the
    /// entry handed back if no memtable keeps it, the counters.
    fn apply_to_memtable(
        &self,
        manager: &DirtyMemoryManager,
        m: &Mutation,
        size_bound: usize,
        logged: Option<(&CommitLog, ReplayPosition)>,
        entered: Instant,
        timeout: Duration,
    ) -> Result<(), Error> {
        let guard = EntryGuard {
            log: logged.map(|(log, _)| log),
            table: self.id,
            position: logged.map(|(_, p)| p),
        };
        let position = guard.position;
        let mut blocked = Duration::ZERO;
        let result = self.list.with_active(|memtable| {
            // `memtable` is weak: waiting below keeps no flushed memtable
            // alive.
            #[cfg(feature = "testing")]
            self.hooks.fire(crate::hooks::HookPoint::WriterTookActive);
            let asked = Instant::now();
            let admitted = manager.run_when_memory_available(
                || self.apply_admitted(&memtable, position, m, entered, asked),
                Some(timeout),
            );
            self.attempt_outcome(admitted, timeout, &mut blocked)
        });
        self.write_done(result, blocked, guard, size_bound)
    }

    /// The end of a write, for `apply` and `apply_async` alike: the time
    /// it waited for memory counted; its log entry handed back (by the
    /// guard) unless the memtable it reached keeps it (`Ok(false)`: the
    /// memtable's flush hands it back); the write counted if it succeeded.
    fn write_done(
        &self,
        result: Result<bool, Error>,
        blocked: Duration,
        mut guard: EntryGuard<'_>,
        size_bound: usize,
    ) -> Result<(), Error> {
        let nanos = u64::try_from(blocked.as_nanos()).unwrap_or(u64::MAX);
        self.counters
            .blocked_nanos
            .fetch_add(nanos, Ordering::Relaxed);
        if matches!(result, Ok(false)) {
            guard.position = None;
        }
        drop(guard);
        if result.is_ok() {
            self.counters.writes.fetch_add(1, Ordering::Relaxed);
            // The user bytes write amplification divides by.
            self.sstables.note_write(size_bound);
        }
        result.map(drop)
    }

    /// The asynchronous form of [`apply`](Self::apply): the same log
    /// append, admission and apply, waiting for the log's sync and for
    /// dirty memory as futures. The entry is appended at the first poll.
    ///
    /// Cancel-safe: the write reaches a memtable inside one poll, which
    /// then completes the future, so a future dropped unfinished never
    /// applied its write; the entry it appended (if it got that far) is
    /// handed back to the log by the drop (see [`EntryGuard`]).
    pub(crate) async fn apply_async(
        &self,
        manager: &DirtyMemoryManager,
        checked: limits::Checked<'_>,
        timeout: Duration,
        log: Option<&CommitLog>,
    ) -> Result<(), Error> {
        let entered = Instant::now();
        let m = checked.mutation();
        let size_bound = checked.size_bound();
        let mut guard = EntryGuard {
            log,
            table: self.id,
            position: None,
        };
        if let Some(log) = log {
            let added = log.add_async(self.id, checked);
            let durable = match added {
                Ok(durable) => durable,
                Err(source) => {
                    self.counters.phases.log_append.record(entered.elapsed());
                    return Err(Error::CommitLog { source });
                }
            };
            guard.position = Some(durable.position());
            let synced = durable.await;
            self.counters.phases.log_append.record(entered.elapsed());
            synced.map_err(|source| Error::CommitLog { source })?;
        }
        let position = guard.position;
        let mut blocked = Duration::ZERO;
        let result = loop {
            // `memtable` is weak: waiting below keeps no flushed memtable
            // alive.
            let memtable = Arc::downgrade(&self.list.active());
            #[cfg(feature = "testing")]
            self.hooks.fire(crate::hooks::HookPoint::WriterTookActive);
            let asked = Instant::now();
            let admitted = manager
                .run_when_memory_available_async(
                    || self.apply_admitted(&memtable, position, m, entered, asked),
                    Some(timeout),
                )
                .await;
            // From here to the end no await: a write that reached a
            // memtable completes this poll.
            let attempt = self.attempt_outcome(admitted, timeout, &mut blocked);
            match attempt {
                Ok(already_flushed) => break Ok(already_flushed),
                Err(Attempt::Sealed) => continue,
                Err(Attempt::Failed(e)) => break Err(e),
            }
        };
        self.write_done(result, blocked, guard, size_bound)
    }

    /// The apply of an admitted write to `memtable` (if it is still
    /// there), for `apply` and `apply_async` alike: records the wait for
    /// admission (since `asked`) and the apply's own time, and returns the
    /// time since the write `entered` with the apply's outcome.
    fn apply_admitted(
        &self,
        memtable: &Weak<TableMemtable>,
        position: Option<ReplayPosition>,
        m: &Mutation,
        entered: Instant,
        asked: Instant,
    ) -> (Duration, Option<Result<bool, memtable::Error>>) {
        let admitted = Instant::now();
        self.counters.phases.admission.record(admitted - asked);
        let applied = memtable
            .upgrade()
            .map(|memtable| memtable.apply_recorded(position, |mt| mt.apply(m)));
        self.counters
            .phases
            .memtable_apply
            .record(admitted.elapsed());
        (entered.elapsed(), applied)
    }

    /// What one admitted attempt on a memtable came to, for `apply` and
    /// `apply_async` alike: `Ok(true)` if the write reached a memtable whose
    /// flush had already handed its log entries back; sealed (try the new
    /// active memtable); or the error to report. Records the time waited.
    fn attempt_outcome(
        &self,
        admitted: Result<(Duration, Option<Result<bool, memtable::Error>>), dirty_memory::Error>,
        timeout: Duration,
        blocked: &mut Duration,
    ) -> Result<bool, Attempt<Error>> {
        match admitted {
            Ok((waited, applied)) => {
                *blocked = waited;
                match applied {
                    Some(Ok(already_flushed)) => Ok(already_flushed),
                    // Flushed and freed while this writer waited.
                    None => Err(Attempt::Sealed),
                    Some(Err(memtable::Error::Sealed { .. })) => Err(Attempt::Sealed),
                    Some(Err(source)) => Err(Attempt::Failed(Error::Memtable {
                        table: self.name().to_owned(),
                        source,
                    })),
                }
            }
            Err(dirty_memory::Error::Admission {
                source: region_group::Error::Shutdown { .. },
                ..
            }) => Err(Attempt::Failed(Error::Closed { operation: "apply" })),
            Err(source) => Err(Attempt::Failed(Error::WriteTimeout {
                table: self.name().to_owned(),
                timeout,
                source,
            })),
        }
    }

    /// Asks `manager` to flush each memtable of the table that holds data
    /// (or is sealed, being flushed already), and returns the completions
    /// to wait for: the one place that knows which memtables a flush of the
    /// table covers.
    ///
    /// # Errors
    /// [`Error::Flush`] if the manager refuses a request (it is shutting
    /// down); a memtable flushed and gone since the snapshot is skipped.
    pub(crate) fn request_flushes(
        &self,
        manager: &DirtyMemoryManager,
    ) -> Result<Vec<FlushCompletion>, Error> {
        let mut completions = Vec::new();
        for memtable in self.list.memtables() {
            if memtable.is_empty() && !memtable.is_sealed() {
                continue;
            }
            match manager.request_flush(memtable.region_id()) {
                Ok(completion) => completions.push(completion),
                Err(dirty_memory::Error::UnknownRegion { .. }) => {}
                Err(source) => {
                    return Err(Error::Flush {
                        table: self.name().to_owned(),
                        source,
                    });
                }
            }
        }
        Ok(completions)
    }

    /// A reader merging every memtable that has something in `range`
    /// with the row cache (which reads through to the sstables), or with
    /// the sstables when the table has no cache; each restricted to
    /// `slice`.
    pub(crate) fn make_reader(
        &self,
        range: PartitionRange,
        slice: ClusteringRange,
    ) -> Result<TableReader, Error> {
        if self.cache.is_some() {
            // The cache reads the sstables itself, pinning them per read
            // of its source (after this snapshot), so this reader pins
            // none.
            return self.make_cached_reader(&self.list.memtables(), range, slice);
        }
        // The memtables, then the sstables pinned (`memtable_list`'s
        // protocol).
        let ReadSources { memtables, pinned } = self.list.read_sources(&self.sstables);
        let mut readers = Gathered::default();
        self.push_memtable_readers(&memtables, &range, &slice, &mut readers)?;
        let memtable_readers = readers.len();
        for handle in pinned.handles() {
            let reader = handle
                .sstable()
                .make_reader_opt(&range, Some(slice.clone()))
                .map_err(|source| Error::Sstable {
                    table: self.name().to_owned(),
                    dir: handle
                        .sstable()
                        .component_path(sstable::Component::Data)
                        .parent()
                        .map(std::path::Path::to_path_buf)
                        .unwrap_or_default(),
                    source,
                })?;
            if let Some(reader) = reader {
                readers.push(Box::new(reader));
            }
        }
        self.sstables.note_read(readers.len() - memtable_readers);
        Ok(readers.into_reader(Some(pinned)))
    }

    /// [`make_reader`](Self::make_reader) building a reader of every
    /// memtable and of the cache even where `make_reader_opt` would know
    /// there is nothing: the baseline the `cache` bench measures
    /// `make_reader_opt` against (feature `testing`). Without a cache, as
    /// `make_reader`.
    #[cfg(feature = "testing")]
    pub(crate) fn make_reader_always(
        &self,
        range: PartitionRange,
        slice: ClusteringRange,
    ) -> Result<TableReader, Error> {
        let Some(cache) = &self.cache else {
            return self.make_reader(range, slice);
        };
        let mut readers: Vec<Box<dyn FragmentReader + Send>> = Vec::new();
        for memtable in self.list.memtables() {
            let reader = memtable
                .memtable()
                .make_reader(range.clone(), slice.clone())
                .map_err(|source| Error::Memtable {
                    table: self.name().to_owned(),
                    source,
                })?;
            readers.push(Box::new(reader));
        }
        readers.push(Box::new(cache.make_reader(range, slice)));
        Ok(TableReader {
            inner: Inner::Merged(MergingReader::new(readers)),
            _pinned: Some(self.sstables.pin()),
        })
    }

    /// [`make_reader`](Self::make_reader) with the cache in place of the
    /// sstables.
    fn make_cached_reader(
        &self,
        memtables: &[Arc<TableMemtable>],
        range: PartitionRange,
        slice: ClusteringRange,
    ) -> Result<TableReader, Error> {
        let mut readers = Gathered::default();
        self.push_memtable_readers(memtables, &range, &slice, &mut readers)?;
        if let Some(reader) = self
            .cache
            .as_ref()
            .and_then(|cache| cache.make_reader_opt(range, slice))
        {
            readers.push(Box::new(reader));
        }
        Ok(readers.into_reader(None))
    }

    /// Pushes the reader of each memtable that has something in `range`.
    fn push_memtable_readers(
        &self,
        memtables: &[Arc<TableMemtable>],
        range: &PartitionRange,
        slice: &ClusteringRange,
        readers: &mut Gathered,
    ) -> Result<(), Error> {
        for memtable in memtables {
            let reader = memtable
                .memtable()
                .make_reader_opt(range.clone(), slice.clone())
                .map_err(|source| Error::Memtable {
                    table: self.name().to_owned(),
                    source,
                })?;
            if let Some(reader) = reader {
                readers.push(Box::new(reader));
            }
        }
        Ok(())
    }

    /// Brings the flushed `memtable` into the cache (if the table has
    /// one), after its sstable joined the list. A failure is counted, not
    /// returned: the cache dropped what it missed, and the flush stands.
    ///
    /// `pin` holds the memtable's memory against the real dirty limit
    /// while the update reads it (the memtable has left the dirty-memory
    /// accounting, see the flush's end); it is released in proportion to
    /// the partitions passed, so writers held at the real limit are let in
    /// as the update goes, not only once it ends.
    pub(crate) fn update_cache(&self, memtable: &TableMemtable, pin: Option<RealPin>) {
        let Some(cache) = &self.cache else { return };
        let partitions = memtable.memtable().stats().partitions;
        let updated = memtable
            .memtable()
            .make_reader(PartitionRange::full(), ClusteringRange::full())
            .map_err(|e| e.to_string())
            .and_then(|reader| {
                #[cfg(feature = "testing")]
                let on_release = {
                    let mut first = true;
                    move || {
                        if std::mem::take(&mut first) {
                            self.hooks
                                .fire(crate::hooks::HookPoint::CacheUpdateReleasedMemory);
                        }
                    }
                };
                #[cfg(not(feature = "testing"))]
                let on_release = || {};
                let mut reader = Unpinning::new(reader, pin, partitions, on_release);
                cache.update_from(&mut reader).map_err(|e| e.to_string())
            });
        if updated.is_err() {
            // `update_from` invalidated what it missed; a memtable that
            // could not be read at all brought nothing, so nothing cached
            // may stand for its keys: drop it all (reads go to the
            // sstables, which hold the flushed data).
            cache.invalidate(&PartitionRange::full());
            self.counters
                .cache_update_failures
                .fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The table's cache figures, `None` without a cache.
    pub(crate) fn cache_metrics(&self) -> Option<CacheMetrics> {
        self.cache.as_ref().map(|cache| {
            CacheMetrics::from_stats(
                &cache.stats(),
                self.counters.cache_update_failures.load(Ordering::Relaxed),
            )
        })
    }

    /// The table's figures.
    pub(crate) fn metrics(&self) -> TableMetrics {
        let memtables = self.list.memtables();
        let mut real = 0;
        let mut spooled = 0;
        for m in &memtables {
            let id = m.region_id();
            real += self.group.region_size(id).map_or(0, |(size, _)| size);
            spooled += self.group.region_spooled(id).unwrap_or(0);
        }
        let c = &self.counters;
        TableMetrics {
            name: self.name().to_owned(),
            memtables: memtables.len(),
            sstables: self.sstables.count(),
            real_dirty: real,
            unspooled_dirty: real.saturating_sub(spooled),
            writes: c.writes.load(Ordering::Relaxed),
            flushes: c.flushes.load(Ordering::Relaxed),
            flushed_memtable_bytes: c.flushed_memtable_bytes.load(Ordering::Relaxed),
            sstable_bytes_written: c.sstable_bytes_written.load(Ordering::Relaxed),
            writers_blocked: Duration::from_nanos(c.blocked_nanos.load(Ordering::Relaxed)),
            write_phases: c.phases.get(),
            cache: self.cache_metrics(),
            compaction: self.sstables.metrics(),
        }
    }
}

/// A read of one table: the merge of its memtables and its row cache (or
/// its sstables, without a cache), in ring order, every partition
/// reconciled. A reader that stays open across a
/// flush sees each row exactly once: it keeps the sources it started with,
/// and readers of a flushed memtable continue in its sstable at their next
/// partition.
pub struct TableReader {
    inner: Inner,
    /// The sstable versions it reads: compaction deletes none of them
    /// while it is open (`None` with a cache, which pins them per read of
    /// its source).
    _pinned: Option<PinnedSstables>,
}

/// The sources of a [`TableReader`]: a single source is read as it is
/// (each source's stream is already reconciled, so merging one would only
/// cost), several are merged.
#[expect(
    clippy::large_enum_variant,
    reason = "one per open read, held in place; boxing the merge would cost every merged read an allocation"
)]
enum Inner {
    One(Box<dyn FragmentReader + Send>),
    Merged(MergingReader<Box<dyn FragmentReader + Send>>),
}

/// The readers of a read's sources, as they are gathered: the first is
/// held on its own, so a read of one source allocates no list.
#[derive(Default)]
struct Gathered {
    first: Option<Box<dyn FragmentReader + Send>>,
    rest: Vec<Box<dyn FragmentReader + Send>>,
}

impl Gathered {
    fn push(&mut self, reader: Box<dyn FragmentReader + Send>) {
        if self.first.is_none() {
            self.first = Some(reader);
        } else {
            self.rest.push(reader);
        }
    }

    fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.rest.len()
    }

    /// One source read as it is; none or several merged.
    fn into_reader(self, pinned: Option<PinnedSstables>) -> TableReader {
        let inner = match (self.first, self.rest) {
            (Some(one), rest) if rest.is_empty() => Inner::One(one),
            (Some(first), mut rest) => {
                rest.insert(0, first);
                Inner::Merged(MergingReader::new(rest))
            }
            (None, rest) => Inner::Merged(MergingReader::new(rest)),
        };
        TableReader {
            inner,
            _pinned: pinned,
        }
    }
}

impl TableReader {
    fn reader(&mut self) -> &mut dyn FragmentReader {
        match &mut self.inner {
            Inner::One(one) => &mut **one,
            Inner::Merged(merged) => merged,
        }
    }
}

impl fmt::Debug for TableReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TableReader").finish_non_exhaustive()
    }
}

impl FragmentReader for TableReader {
    fn next(&mut self) -> Result<Option<Fragment>, mutation::Error> {
        self.reader().next()
    }

    fn fast_forward_to(&mut self, range: PartitionRange) -> Result<(), mutation::Error> {
        self.reader().fast_forward_to(range)
    }

    fn next_partition(&mut self) -> Result<(), mutation::Error> {
        self.reader().next_partition()
    }

    /// One source's partition as that source hands it over (a cache hit
    /// whole, as it was decoded); several sources' merged and collected.
    fn next_mutation(&mut self) -> Result<Option<Mutation>, mutation::Error> {
        self.reader().next_mutation()
    }
}

/// A write's log entry between its append and its apply: handed back to
/// the log ([`CommitLog::discard_flushed`]) when the guard goes, unless the
/// write reached a memtable that keeps it (`position` cleared); both
/// write paths end through [`Table::write_done`]. It is also the async
/// path's cancel-safety: a future dropped between its append and its apply
/// drops the guard too.
struct EntryGuard<'a> {
    log: Option<&'a CommitLog>,
    table: TableId,
    position: Option<commitlog::ReplayPosition>,
}

impl Drop for EntryGuard<'_> {
    fn drop(&mut self) {
        if let (Some(log), Some(p)) = (self.log, self.position.take()) {
            log.discard_flushed(self.table, &ReplayPositionSet::from(p));
        }
    }
}

/// A reader of a flushed memtable that releases the memtable's real-dirty
/// pin as its partitions go by: an equal share per partition (when the
/// next one starts, so once the cache took it), in steps of
/// a sixteenth of the pin up to [`Unpinning::MAX_STEP`], so a memtable of
/// small partitions does not take the group's lock for each, and a small
/// one still releases in steps. The rest goes with the pin when the reader
/// is dropped. `on_release` runs after each step.
struct Unpinning<R, F> {
    inner: R,
    pin: Option<RealPin>,
    per_partition: usize,
    step: usize,
    owed: usize,
    /// A partition was started (its share is owed when the next starts).
    started: bool,
    on_release: F,
}

impl<R, F: FnMut()> Unpinning<R, F> {
    /// The largest step, in bytes.
    const MAX_STEP: usize = 1 << 20;

    fn new(inner: R, pin: Option<RealPin>, partitions: usize, on_release: F) -> Self {
        let bytes = pin.as_ref().map_or(0, RealPin::bytes);
        Unpinning {
            inner,
            pin,
            per_partition: bytes / partitions.max(1),
            step: (bytes / 16).clamp(1, Self::MAX_STEP),
            owed: 0,
            started: false,
            on_release,
        }
    }

    /// A partition starts: the one before it has passed.
    fn partition_starts(&mut self) {
        let Some(pin) = &mut self.pin else { return };
        if !std::mem::replace(&mut self.started, true) {
            return;
        }
        self.owed += self.per_partition;
        if self.owed >= self.step {
            pin.release(std::mem::take(&mut self.owed));
            (self.on_release)();
        }
    }
}

impl<R: FragmentReader, F: FnMut()> FragmentReader for Unpinning<R, F> {
    fn next(&mut self) -> Result<Option<Fragment>, mutation::Error> {
        let fragment = self.inner.next()?;
        if let Some(Fragment::PartitionStart { .. }) = &fragment {
            self.partition_starts();
        }
        Ok(fragment)
    }

    fn fast_forward_to(&mut self, range: PartitionRange) -> Result<(), mutation::Error> {
        self.inner.fast_forward_to(range)
    }

    fn next_partition(&mut self) -> Result<(), mutation::Error> {
        self.inner.next_partition()
    }

    fn next_mutation(&mut self) -> Result<Option<Mutation>, mutation::Error> {
        let m = self.inner.next_mutation()?;
        if m.is_some() {
            self.partition_starts();
        }
        Ok(m)
    }
}

#[cfg(all(test, not(loom)))]
mod unpinning_tests {
    use mutation::{Cell, DecoratedKey, Timestamp, from_mutations};
    use region_group::{ReclaimConfig, RegionId, RegionListener};

    use super::*;

    fn partition(i: u32) -> Mutation {
        Mutation::builder(DecoratedKey::from_bytes(format!("pk{i:03}")).unwrap())
            .cell("r", 0, Cell::live(vec![1u8; 8], Timestamp::from_micros(1)))
            .build()
            .unwrap()
    }

    /// A group holding `bytes` in a region that has left, pinned.
    fn pinned(bytes: usize) -> (sync::plain::Arc<RegionGroup>, RealPin) {
        let group = RegionGroup::new("unpinning", ReclaimConfig::default());
        let region = RegionId::from_raw(1);
        group.add(region, bytes);
        let pin = group.pin_on_leave(region).unwrap();
        group.del(region, bytes);
        (group, pin)
    }

    #[test]
    fn each_partition_releases_its_share_once_the_next_starts() {
        // 32 partitions of 1,024 bytes each: steps of 2,048 (a sixteenth).
        let (group, pin) = pinned(32 << 10);
        let reader = from_mutations((0..32).map(partition).collect::<Vec<_>>());
        let mut releases = 0;
        let mut reader = Unpinning::new(reader, Some(pin), 32, || releases += 1);
        let mut seen = Vec::new();
        while let Some(f) = reader.next().unwrap() {
            if matches!(f, Fragment::PartitionStart { .. }) {
                seen.push(group.real_usage());
            }
        }
        // At each partition's start, the partitions before it are
        // released, in steps of two.
        let want: Vec<usize> = (0..32).map(|i| (32 << 10) - (i / 2) * 2048).collect();
        assert_eq!(seen, want);
        // 31 passed, 30 of them released: one share owed, and the last.
        assert_eq!(group.real_usage(), 2048);
        drop(reader);
        assert_eq!(group.real_usage(), 0, "the rest goes with the reader");
        assert_eq!(releases, 15);
    }

    #[test]
    fn whole_partitions_release_too() {
        let (group, pin) = pinned(4 << 10);
        let reader = from_mutations((0..4).map(partition).collect::<Vec<_>>());
        let mut reader = Unpinning::new(reader, Some(pin), 4, || {});
        let mut got = 0;
        while reader.next_mutation().unwrap().is_some() {
            got += 1;
        }
        assert_eq!(got, 4);
        assert_eq!(
            group.real_usage(),
            1 << 10,
            "three passed, the last at the end"
        );
        drop(reader);
        assert_eq!(group.real_usage(), 0);
    }

    #[test]
    fn without_a_pin_it_only_reads() {
        let reader = from_mutations((0..3).map(partition).collect::<Vec<_>>());
        let mut reader = Unpinning::new(reader, None, 3, || panic!("nothing to release"));
        assert_eq!(mutation::to_mutations(&mut reader).unwrap().len(), 3);
    }
}
