//! A table's sstables and their compaction, wired in (named apart from
//! the `compaction` crate it drives): the crate's [`SstableSet`] is the
//! one place that holds a table's sstables (the memtable list keeps only
//! memtables), and each set is a [`CompactionTable`] of the database's
//! [`CompactionManager`].
//!
//! # One set per data directory; flush directories join the first
//!
//! Compactions run on the data directories; flushes keep using the flush
//! directories (CASSANDRA-6357's separate flush directories, so compaction
//! I/O does not stall flushes). A table has one set per data directory,
//! which writes its compactions' outputs there; the table's separate flush
//! directories (those that are not also data directories) belong to the
//! set of the first data directory ([`SstableSet::open_dirs`]), so their
//! flushed sstables are compacted into it and leave the flush directories.
//! Generations are unique across a set's directories: flushes take their
//! writers from the set ([`TableSstables::create_writer`]). Reads pin
//! every set; a tombstone is purged only when no memtable of the table and
//! no sstable outside the job, in any of the table's sets, may hold data
//! it shadows ([`MaxPurgeable`]).
//!
//! # Ordering with flushes and reads
//!
//! A flush adds its sstable to the set (`SstableSet::add`) before its
//! memtable leaves the memtable list. A read takes the memtable list's
//! sources first and pins the sets after: a memtable it does not see was
//! removed after its sstable joined a set, so the pinned version has it
//! (the memtable and its sstable may both be seen; the merging reader
//! reconciles identical data). `max_purgeable` looks at the memtables
//! first and the sets after, for the same reason.
//!
//! # The row cache and the purge
//!
//! A tombstone the purge drops from the sstables would stay in the table's
//! row cache, which would then answer differently from the sstables (the
//! tombstone itself, and a later write older than it hidden until the
//! entry is evicted). So each job's ticket records the keys the job asks
//! `max_purgeable` about (the purge asks only where it may drop
//! something), and when the manager reports the job's swap (`replaced`)
//! the cache invalidates those keys: after the swap, so the cache's phase
//! refuses any population that read the job's inputs. Past
//! `MAX_PURGED_KEYS` keys a job's span is invalidated instead.

use std::collections::HashSet;
use std::fmt;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::time::Duration;

use compaction::{
    CompactionManager, CompactionMetrics, CompactionTable, JobOptions, ManagerConfig, MaxPurgeable,
    NoCompaction, SetSnapshot, SstableHandle, SstableSet, Strategy, StrategyConfig,
};
use mutation::{DecoratedKey, PartitionRange, RingPosition, Timestamp};
use sstable::{Sstable, WriterOptions};

use crate::database::flush_throttle::{FlushThrottle, FlushThrottleConfig};
use crate::database::table::Table;
use crate::devices::Devices;
use crate::error::Error;
use crate::sync::{Arc, AtomicBool, AtomicU64, Condvar, Mutex, Ordering, Weak};

/// How a database compacts its tables' sstables
/// ([`DatabaseConfig::compaction`](crate::DatabaseConfig::compaction)).
///
/// ```
/// use replica::{CompactionConfig, compaction::StrategyConfig};
///
/// let mut config = CompactionConfig::default();
/// config.strategy = StrategyConfig::parse("stcs")?;
/// config.bandwidth_limit = Some(64 << 20);
/// config.validate()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct CompactionConfig {
    /// Every table's strategy: incremental (the crate's default: it tiers
    /// like size-tiered but needs a few fragments of temporary disk per
    /// job, not up to its whole input), size-tiered, or none.
    pub strategy: StrategyConfig,
    /// Tombstones younger than this are never purged (default 10 days,
    /// Cassandra's `gc_grace_seconds`; at most `u32::MAX` seconds).
    pub gc_grace: Duration,
    /// Disk bandwidth limit of all compactions in bytes written per
    /// second (`None`, the default: unlimited). Compaction takes a share
    /// of it that grows with its backlog.
    pub bandwidth_limit: Option<u64>,
    /// Compaction worker threads (default 1, for a 2-core machine; 1 to
    /// 64).
    pub workers: usize,
    /// The clock deletion times and TTLs are compared with (the system
    /// clock by default; tests use `compaction::ManualClock`).
    pub clock: Arc<dyn compaction::Clock>,
    /// When a table's flushes wait for its compactions, so that sorted
    /// runs do not pile up under sustained writes (off by default: see
    /// [`FlushThrottleConfig`]'s default; [`FlushThrottleConfig::SUGGESTED`]
    /// waits for a compaction step from 20 runs, and from 28 until the
    /// count is below it).
    pub flush_throttle: FlushThrottleConfig,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        let job = JobOptions::default();
        let manager = ManagerConfig::default();
        CompactionConfig {
            strategy: StrategyConfig::default(),
            gc_grace: job.gc_grace,
            bandwidth_limit: manager.bandwidth,
            workers: manager.workers,
            clock: job.clock,
            flush_throttle: FlushThrottleConfig::default(),
        }
    }
}

impl fmt::Debug for CompactionConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompactionConfig")
            .field("strategy", &self.strategy)
            .field("gc_grace", &self.gc_grace)
            .field("bandwidth_limit", &self.bandwidth_limit)
            .field("workers", &self.workers)
            .field("clock", &self.clock)
            .field("flush_throttle", &self.flush_throttle)
            .finish()
    }
}

impl PartialEq for CompactionConfig {
    fn eq(&self, other: &Self) -> bool {
        self.strategy == other.strategy
            && self.gc_grace == other.gc_grace
            && self.bandwidth_limit == other.bandwidth_limit
            && self.workers == other.workers
            && self.flush_throttle == other.flush_throttle
            && std::ptr::addr_eq(Arc::as_ptr(&self.clock), Arc::as_ptr(&other.clock))
    }
}

impl CompactionConfig {
    /// Checks every option.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] naming `compaction` and the compaction
    /// crate's complaint: a bad strategy option, a gc_grace above
    /// `u32::MAX` seconds, zero or more than 64 workers, or a zero
    /// bandwidth limit; or a flush throttle that slows down above the
    /// count where it stops.
    pub fn validate(&self) -> Result<(), Error> {
        if !self.flush_throttle.is_valid() {
            return Err(Error::InvalidOption {
                name: "compaction.flush_throttle",
                value: format!("{:?}", self.flush_throttle),
                expected: "slowdown_runs at most stop_runs (0 turns either off)".to_owned(),
            });
        }
        let invalid = |e: compaction::Error| Error::InvalidOption {
            name: "compaction",
            value: format!("{self:?}"),
            expected: e.to_string(),
        };
        self.strategy.build().map_err(invalid)?;
        self.manager_config().validate().map_err(invalid)?;
        let mut job = JobOptions::default();
        job.gc_grace = self.gc_grace;
        job.validate().map_err(invalid)
    }

    fn manager_config(&self) -> ManagerConfig {
        let mut m = ManagerConfig::default();
        m.workers = self.workers;
        m.bandwidth = self.bandwidth_limit;
        m
    }
}

/// True for the files the compaction crate keeps next to a table's
/// sstables (transaction files and run membership), which the database
/// owns and removes with the table's sstables.
pub(crate) fn is_compaction_file_name(name: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some(rest) = name.strip_prefix("run-") {
        return rest.strip_suffix(".txt").is_some_and(digits);
    }
    if let Some(rest) = name.strip_prefix("compaction-") {
        let rest = rest
            .strip_suffix(".txn.tmp")
            .or_else(|| rest.strip_suffix(".txn"));
        return rest.is_some_and(|r| {
            r.split_once('-')
                .is_some_and(|(a, b)| digits(a) && digits(b))
        });
    }
    false
}

/// What every table's sets share: the manager and the job options.
pub(crate) struct CompactionShared {
    pub(crate) manager: CompactionManager,
    config: CompactionConfig,
    writer: WriterOptions,
    /// Which device each table directory is on: a set's jobs read and
    /// write through its directory's device.
    devices: Arc<Devices>,
    /// Test hook: stop every job after this step of its replacement, as a
    /// crash would (`usize::MAX`: never).
    #[cfg_attr(
        not(feature = "testing"),
        expect(dead_code, reason = "read by the testing feature's job options")
    )]
    stop_after: AtomicU64,
}

impl fmt::Debug for CompactionShared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompactionShared")
            .field("manager", &self.manager)
            .finish_non_exhaustive()
    }
}

impl CompactionShared {
    /// Starts the manager's workers.
    pub(crate) fn new(
        config: &CompactionConfig,
        writer: WriterOptions,
        devices: Arc<Devices>,
    ) -> Result<Self, Error> {
        let manager =
            CompactionManager::new(config.manager_config()).map_err(|e| Error::Start {
                what: "compaction manager",
                detail: e.to_string(),
            })?;
        Ok(CompactionShared {
            manager,
            config: config.clone(),
            writer,
            devices,
            stop_after: AtomicU64::new(u64::MAX),
        })
    }

    /// Test hook: stop the next jobs after step `step` of the replacement.
    #[cfg(feature = "testing")]
    pub(crate) fn set_stop_after(&self, step: Option<usize>) {
        let v = step.map_or(u64::MAX, |s| s as u64);
        self.stop_after.store(v, Ordering::SeqCst);
    }

    /// The manager's counters.
    pub(crate) fn metrics(&self) -> CompactionMetrics {
        self.manager.metrics()
    }
}

/// A table's figures of compaction, in [`TableMetrics`](crate::TableMetrics).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableCompactionMetrics {
    /// Bytes on disk of the table's live sstables.
    pub live_sstable_bytes: u64,
    /// Compactions of the table that completed.
    pub jobs_completed: u64,
    /// Sstables those jobs replaced.
    pub sstables_compacted: u64,
    /// Sstables those jobs wrote.
    pub sstables_written: u64,
    /// Bytes written by users (an upper bound of each applied mutation's
    /// sstable encoding, `mutation::limits::size_bound`).
    pub user_bytes: u64,
    /// Reads of the table.
    pub reads: u64,
    /// Sstables those reads consulted (key range and bloom filter admit
    /// the read's range), summed.
    pub sstables_consulted: u64,
    /// Sorted runs of the table now (a flushed sstable is one, an
    /// incremental run of fragments is one).
    pub sorted_runs: usize,
    /// Flushes that waited for compaction to catch up
    /// ([`CompactionConfig::flush_throttle`]).
    pub flushes_throttled: u64,
    /// Their wait, summed.
    pub flush_throttle_wait: Duration,
}

impl TableCompactionMetrics {
    /// Sstables consulted per read, on average (0 before any read).
    pub fn sstables_per_read(&self) -> f64 {
        if self.reads == 0 {
            0.0
        } else {
            self.sstables_consulted as f64 / self.reads as f64
        }
    }
}

#[derive(Debug, Default)]
struct Counters {
    jobs: AtomicU64,
    compacted: AtomicU64,
    written: AtomicU64,
    user_bytes: AtomicU64,
    reads: AtomicU64,
    consulted: AtomicU64,
}

/// One directory's sstables of a table, as the manager compacts them.
pub(crate) struct DirSet {
    set: SstableSet,
    /// The device of the set's directory (its jobs' outputs are written
    /// and opened on it; its sstables were opened on it).
    device: Option<Arc<device::Device>>,
    strategy: Box<dyn Strategy>,
    table: Weak<Table>,
    name: String,
    shared: Arc<CompactionShared>,
    /// Set by `drop_table`: no new job starts.
    stopped: AtomicBool,
    /// Whether the table has a row cache (its jobs' purged keys are then
    /// recorded for it to forget).
    cached: bool,
    /// Tickets the manager holds (queued or running checks).
    tickets: Mutex<usize>,
    idle: Condvar,
    /// The table's flush throttle, told of this set's checks and steps.
    throttle: Arc<FlushThrottle>,
}

impl fmt::Debug for DirSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DirSet")
            .field("name", &self.name)
            .field("set", &self.set)
            .finish_non_exhaustive()
    }
}

impl MaxPurgeable for DirSet {
    fn max_purgeable(&self, key: &DecoratedKey) -> Timestamp {
        // A table being dropped purges nothing (its data goes anyway).
        let Some(table) = self.table.upgrade() else {
            return Timestamp::MIN;
        };
        let mut min = Timestamp::MAX;
        // Memtables first, then the sets: see the module docs.
        for memtable in table.list.memtables() {
            if let Some(ts) = memtable.memtable().stats().min_timestamp {
                min = min.min(ts);
            }
        }
        let none = HashSet::new();
        for other in &table.sstables.sets {
            if !std::ptr::eq(&**other, self) {
                min = min.min(other.set.snapshot().max_purgeable(key, &none));
            }
        }
        min
    }
}

impl CompactionTable for DirSet {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn sstables(&self) -> &SstableSet {
        &self.set
    }

    fn strategy(&self) -> &dyn Strategy {
        if self.stopped.load(Ordering::Acquire) {
            &NoCompaction
        } else {
            &*self.strategy
        }
    }

    fn job_options(&self) -> JobOptions {
        #[cfg(feature = "testing")]
        if let Some(table) = self.table.upgrade() {
            table
                .hooks
                .fire(crate::hooks::HookPoint::CompactionJobStarting);
        }
        let mut options = JobOptions::default();
        options.gc_grace = self.shared.config.gc_grace;
        options.clock = Arc::clone(&self.shared.config.clock);
        options.writer = self.shared.writer.clone();
        options.writer.device = self.device.clone();
        #[cfg(feature = "testing")]
        {
            let step = self.shared.stop_after.load(Ordering::SeqCst);
            options.stop_after = usize::try_from(step).ok().filter(|_| step != u64::MAX);
        }
        options
    }

    fn stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    fn replaced(&self, removed: &[u64], added: &[u64]) {
        self.throttle.step_done();
        if let Some(table) = self.table.upgrade() {
            let c = &table.sstables.counters;
            c.jobs.fetch_add(1, Ordering::Relaxed);
            c.compacted
                .fetch_add(removed.len() as u64, Ordering::Relaxed);
            c.written.fetch_add(added.len() as u64, Ordering::Relaxed);
        }
    }
}

/// The most keys a job's [`PurgedKeys`] lists one by one; past it, it
/// keeps their span (the row cache then forgets the whole span).
const MAX_PURGED_KEYS: usize = 4096;

/// The keys a job may purge tombstones in (every key it asked
/// `max_purgeable` about: the purge asks only for a key with a tombstone
/// or expired cell past `gc_grace`), for the row cache to forget once the
/// job's outputs replace its inputs. A purged tombstone would otherwise
/// stay in the cache, answering differently from the sstables (see the
/// row-cache crate's documentation, "Compaction's purge").
#[derive(Debug, Default)]
struct PurgedKeys {
    keys: Vec<DecoratedKey>,
    /// The first and last key, once there were more than
    /// [`MAX_PURGED_KEYS`].
    span: Option<(DecoratedKey, DecoratedKey)>,
}

impl PurgedKeys {
    fn note(&mut self, key: &DecoratedKey) {
        if let Some((first, last)) = &mut self.span {
            if *key < *first {
                *first = key.clone();
            }
            if *key > *last {
                *last = key.clone();
            }
            return;
        }
        if self.keys.last() == Some(key) {
            return;
        }
        if self.keys.len() < MAX_PURGED_KEYS {
            self.keys.push(key.clone());
            return;
        }
        let mut first = key.clone();
        let mut last = key.clone();
        for k in self.keys.drain(..) {
            if k < first {
                first = k;
            } else if k > last {
                last = k;
            }
        }
        self.span = Some((first, last));
    }

    /// Makes `table`'s cache forget every key noted (after the swap: a
    /// population that read the job's inputs is refused by the cache's
    /// phase, one that reads after this reads the outputs).
    fn forget_in(self, table: &Table) {
        let Some(cache) = &table.cache else { return };
        match self.span {
            Some((first, last)) => {
                let range = PartitionRange::new(
                    Bound::Included(RingPosition::Key(first)),
                    Bound::Included(RingPosition::Key(last)),
                )
                .unwrap_or_else(|_| PartitionRange::full());
                cache.invalidate(&range);
            }
            None if !self.keys.is_empty() => cache.invalidate_keys(&self.keys),
            None => {}
        }
    }
}

/// What the manager holds of a [`DirSet`] while a check of it is queued
/// or running, so `drop_table` can wait for the set's jobs to end. The
/// manager runs a ticket's jobs one after the other, asks the ticket for
/// `max_purgeable` during a job and tells it `replaced` after the job's
/// swap, so the keys a job may purge in are the ticket's until then.
struct Ticket {
    set: Arc<DirSet>,
    purged: Mutex<PurgedKeys>,
}

impl Ticket {
    fn new(set: &Arc<DirSet>) -> Self {
        *set.tickets.lock() += 1;
        set.throttle.check_queued();
        Ticket {
            set: Arc::clone(set),
            purged: Mutex::new(PurgedKeys::default()),
        }
    }

    /// The cache forgets the keys noted so far.
    fn forget_purged(&self) {
        let purged = std::mem::take(&mut *self.purged.lock());
        if purged.keys.is_empty() && purged.span.is_none() {
            return;
        }
        if let Some(table) = self.set.table.upgrade() {
            purged.forget_in(&table);
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        // A job that failed after an incremental checkpoint swapped part
        // of its inputs gets no `replaced`: forgetting its keys now is
        // late but never wrong.
        self.forget_purged();
        self.set.throttle.check_ended();
        let mut n = self.set.tickets.lock();
        *n -= 1;
        if *n == 0 {
            self.set.idle.notify_all();
        }
    }
}

impl MaxPurgeable for Ticket {
    fn max_purgeable(&self, key: &DecoratedKey) -> Timestamp {
        if self.set.cached {
            self.purged.lock().note(key);
        }
        self.set.max_purgeable(key)
    }
}

impl CompactionTable for Ticket {
    fn name(&self) -> String {
        self.set.name()
    }
    fn sstables(&self) -> &SstableSet {
        // The same set (and address) for every ticket of the directory:
        // the manager tells tables apart by it.
        self.set.sstables()
    }
    fn strategy(&self) -> &dyn Strategy {
        self.set.strategy()
    }
    fn job_options(&self) -> JobOptions {
        self.set.job_options()
    }
    fn replaced(&self, removed: &[u64], added: &[u64]) {
        // The outputs are in the set: the cache may forget the purge's
        // keys now, and must not before.
        self.forget_purged();
        self.set.replaced(removed, added);
    }
    fn stopped(&self) -> bool {
        self.set.stopped()
    }
}

/// A table's sstables: one set per table directory.
pub(crate) struct TableSstables {
    pub(crate) sets: Vec<Arc<DirSet>>,
    counters: Counters,
    throttle: Arc<FlushThrottle>,
}

impl fmt::Debug for TableSstables {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.sets).finish()
    }
}

/// Every set of a table, pinned for one read.
#[derive(Debug, Clone)]
pub(crate) struct PinnedSstables {
    snapshots: Vec<SetSnapshot>,
}

impl PinnedSstables {
    /// The sstables, set by set.
    pub(crate) fn handles(&self) -> impl Iterator<Item = &SstableHandle> {
        self.snapshots.iter().flat_map(SetSnapshot::handles)
    }
}

/// Opens the table's sets (recovering half-done compactions first): one
/// per data directory, the first `data_dirs` of `dirs`; the rest of `dirs`
/// (separate flush directories) join the first data directory's set. Each
/// directory's sstables are opened on its device.
///
/// # Errors
/// [`Error::Compaction`] naming the table for a damaged transaction file
/// or an sstable that does not open.
pub(crate) fn open_sets(
    fs: &fs::FsHandle,
    table: &str,
    dirs: &[PathBuf],
    data_dirs: usize,
    devices: &Devices,
) -> Result<Vec<SstableSet>, Error> {
    let data_dirs = data_dirs.clamp(1, dirs.len().max(1));
    let flush_only = dirs.get(data_dirs..).unwrap_or_default();
    dirs.iter()
        .take(data_dirs)
        .enumerate()
        .map(|(i, dir)| {
            let others = if i == 0 { flush_only } else { &[] };
            SstableSet::open_dirs_with(dir, others, |d| devices.for_path(d), fs).map_err(|source| {
                Error::Compaction {
                    table: table.to_owned(),
                    source,
                }
            })
        })
        .collect()
}

impl TableSstables {
    /// The sstables of the table `table` will point to, from its opened
    /// `sets` (the table's strategy built from the shared configuration,
    /// which was validated).
    pub(crate) fn new(
        name: &str,
        sets: Vec<SstableSet>,
        table: Weak<Table>,
        shared: &Arc<CompactionShared>,
        cached: bool,
    ) -> Self {
        let throttle = Arc::new(FlushThrottle::new(shared.config.flush_throttle));
        let sets = sets
            .into_iter()
            .map(|set| {
                let strategy = shared
                    .config
                    .strategy
                    .build()
                    .unwrap_or_else(|_| Box::new(NoCompaction));
                let dir = set.dir().map(Path::display).map(|d| d.to_string());
                let device = set.dir().and_then(|d| shared.devices.for_path(d));
                Arc::new(DirSet {
                    name: format!("{name} in {}", dir.unwrap_or_default()),
                    set,
                    device,
                    strategy,
                    table: table.clone(),
                    shared: Arc::clone(shared),
                    stopped: AtomicBool::new(false),
                    cached,
                    tickets: Mutex::new(0),
                    idle: Condvar::new(),
                    throttle: Arc::clone(&throttle),
                })
            })
            .collect();
        TableSstables {
            sets,
            counters: Counters::default(),
            throttle,
        }
    }

    /// Adds a flushed sstable to the set of the directory it was written
    /// in, and returns its handle (which pins its files).
    ///
    /// # Errors
    /// [`Error::Compaction`] (`NotInSet`) for an sstable of a directory
    /// the table has no set for (flushes write only to the table's
    /// directories, so it does not happen).
    pub(crate) fn add(&self, dir: &Path, sstable: Sstable) -> Result<SstableHandle, Error> {
        match self.sets.iter().find(|s| s.set.spans(dir)) {
            Some(s) => Ok(s.set.add(sstable)),
            None => Err(Error::Compaction {
                table: self
                    .sets
                    .first()
                    .map(|s| s.name.clone())
                    .unwrap_or_default(),
                source: compaction::Error::NotInSet {
                    generation: sstable.generation(),
                },
            }),
        }
    }

    /// Starts a flush's sstable in `dir`, one of the table's directories,
    /// with a generation unique across the directories of the set it
    /// joins (see the module docs).
    ///
    /// # Errors
    /// [`compaction::Error::ForeignDirectory`] for a directory of no set
    /// (flushes write only to the table's directories, so it does not
    /// happen); the writer's errors.
    pub(crate) fn create_writer(
        &self,
        dir: &Path,
        options: WriterOptions,
    ) -> Result<sstable::Writer, compaction::Error> {
        match self.sets.iter().find(|s| s.set.spans(dir)) {
            Some(s) => s.set.create_writer(dir, options),
            None => Err(compaction::Error::ForeignDirectory {
                dir: dir.to_path_buf(),
            }),
        }
    }

    /// Asks the manager to check every set (after a flush, at open). Only
    /// queues: never waits for a compaction. A closed manager is ignored.
    pub(crate) fn submit(&self) {
        for s in &self.sets {
            if s.stopped.load(Ordering::Acquire) {
                continue;
            }
            let ticket = Arc::new(Ticket::new(s));
            drop(s.shared.manager.submit(ticket));
        }
    }

    /// A major compaction of every set, waiting for each.
    ///
    /// # Errors
    /// [`Error::Compaction`] with the first failure ([`Error::DiskFull`]
    /// when the disk was full).
    pub(crate) fn major(&self, table: &str) -> Result<(), Error> {
        for s in &self.sets {
            let ticket = Arc::new(Ticket::new(s));
            s.shared.manager.major(ticket).map_err(|source| {
                let dir = s.set.dir().map_or_else(PathBuf::new, Path::to_path_buf);
                Error::compaction(table, &dir, source)
            })?;
        }
        Ok(())
    }

    /// Stops the table's compactions (for `drop_table`): no new job
    /// starts, a running one stops at its next check (inputs intact,
    /// partial outputs removed), and this waits for the queued checks and
    /// the running job of each set to end.
    pub(crate) fn stop(&self) {
        for s in &self.sets {
            s.stopped.store(true, Ordering::Release);
        }
        for s in &self.sets {
            let mut n = s.tickets.lock();
            while *n > 0 {
                s.idle.wait(&mut n);
            }
        }
    }

    /// Pins every set for one read.
    pub(crate) fn pin(&self) -> PinnedSstables {
        PinnedSstables {
            snapshots: self.sets.iter().map(|s| s.set.snapshot()).collect(),
        }
    }
}

impl crate::database::memtable_list::SstableSet for TableSstables {
    type Pinned = PinnedSstables;

    fn pin(&self) -> PinnedSstables {
        TableSstables::pin(self)
    }
}

impl TableSstables {
    /// Counts a read that consulted `consulted` sstables.
    pub(crate) fn note_read(&self, consulted: usize) {
        self.counters.reads.fetch_add(1, Ordering::Relaxed);
        self.counters
            .consulted
            .fetch_add(consulted as u64, Ordering::Relaxed);
    }

    /// Counts a user's write of `size_bound` bytes (its
    /// `mutation::limits::size_bound`, as the write's check measured it).
    pub(crate) fn note_write(&self, size_bound: usize) {
        self.counters
            .user_bytes
            .fetch_add(size_bound as u64, Ordering::Relaxed);
    }

    /// How many sstables the table has.
    pub(crate) fn count(&self) -> usize {
        self.sets.iter().map(|s| s.set.snapshot().len()).sum()
    }

    /// How many sorted runs the table has (a flushed sstable is one, an
    /// incremental run of fragments is one): what a read may consult.
    pub(crate) fn runs(&self) -> usize {
        self.sets
            .iter()
            .map(|s| {
                let snapshot = s.set.snapshot();
                let mut runs: Vec<u64> = snapshot
                    .handles()
                    .iter()
                    .map(|h| h.info().run_id())
                    .collect();
                runs.sort_unstable();
                runs.dedup();
                runs.len()
            })
            .sum()
    }

    /// Holds a flush of the table back while its compactions fall behind
    /// (see `flush_throttle`), calling `held` once before it waits;
    /// returns how long it waited.
    pub(crate) fn throttle_flush(&self, held: impl FnOnce()) -> Duration {
        self.throttle.wait(|| self.runs(), held)
    }

    /// The table's compaction figures.
    pub(crate) fn metrics(&self) -> TableCompactionMetrics {
        let c = &self.counters;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        TableCompactionMetrics {
            live_sstable_bytes: self
                .sets
                .iter()
                .map(|s| s.set.snapshot().total_size())
                .sum(),
            jobs_completed: load(&c.jobs),
            sstables_compacted: load(&c.compacted),
            sstables_written: load(&c.written),
            user_bytes: load(&c.user_bytes),
            reads: load(&c.reads),
            sstables_consulted: load(&c.consulted),
            sorted_runs: self.runs(),
            flushes_throttled: self.throttle.figures().0,
            flush_throttle_wait: self.throttle.figures().1,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn purged_keys_are_listed_then_spanned() {
        let k = |i: usize| DecoratedKey::from_bytes(format!("k{i:05}")).unwrap();
        let mut purged = PurgedKeys::default();
        purged.note(&k(1));
        purged.note(&k(1));
        purged.note(&k(2));
        assert_eq!(
            purged.keys,
            [k(1), k(2)],
            "a key asked about twice is listed once"
        );
        assert!(purged.span.is_none());
        let mut keys: Vec<DecoratedKey> = (0..=MAX_PURGED_KEYS).map(k).collect();
        let mut purged = PurgedKeys::default();
        for key in &keys {
            purged.note(key);
        }
        keys.sort();
        assert!(purged.keys.is_empty());
        let (first, last) = purged.span.clone().expect("past the limit: a span");
        assert_eq!((&first, &last), (&keys[0], &keys[MAX_PURGED_KEYS]));
        // Another key widens the span to hold it.
        let other = DecoratedKey::from_bytes("another").unwrap();
        purged.note(&other);
        let span = purged.span.expect("still a span");
        assert_eq!(span, (first.min(other.clone()), last.max(other)));
    }

    #[test]
    fn compaction_files_are_recognised_and_others_are_not() {
        for yes in [
            "run-12.txt",
            "compaction-3-0.txn",
            "compaction-3-12.txn.tmp",
        ] {
            assert!(is_compaction_file_name(yes), "{yes}");
        }
        for no in [
            "run-.txt",
            "run-1.txt.bak",
            "compaction-3.txn",
            "compaction-a-1.txn",
            "photos",
            "sst-1-Data.db",
        ] {
            assert!(!is_compaction_file_name(no), "{no}");
        }
    }

    #[test]
    fn bad_options_are_named() {
        let mut c = CompactionConfig::default();
        c.validate().unwrap();
        c.workers = 0;
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("compaction") && e.contains("workers"), "{e}");
        let c = CompactionConfig {
            bandwidth_limit: Some(0),
            ..CompactionConfig::default()
        };
        assert!(c.validate().unwrap_err().to_string().contains("bandwidth"));
        let c = CompactionConfig {
            gc_grace: Duration::from_secs(u64::from(u32::MAX) + 1),
            ..CompactionConfig::default()
        };
        assert!(c.validate().unwrap_err().to_string().contains("gc_grace"));
    }
}
