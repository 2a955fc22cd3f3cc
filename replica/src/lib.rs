//! `replica`: a [`Database`] of tables composed from the workspace's
//! crates. The load generator that runs against it, `replica-stress`, is
//! its own crate on this public API: the library carries no command line
//! and no reports.
//!
//! Writes go through the dirty-memory manager (`dirty-memory`) into
//! memtables (`memtable`, in `logalloc` regions of the manager's
//! `region-group`); memtables are flushed through the flush scheduler
//! (`flush-scheduler`) into sstables (`sstable`); reads merge every
//! memtable of a table with its row cache (`row-cache`, in the same
//! `logalloc` pool, reading through to the table's sstables; or with the
//! sstables directly when the cache is off) with `mutation`'s merging
//! reader.
//!
//! ```
//! use replica::mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, Timestamp};
//! use replica::{Database, DatabaseConfig, TableSchema};
//!
//! let dir = tempfile::tempdir()?;
//! let db = Database::open(DatabaseConfig::new(dir.path()))?;
//! db.create_table(TableSchema::new("users")?)?;
//!
//! let key = DecoratedKey::from_bytes("user:1")?;
//! let write = Mutation::builder(key.clone())
//!     .cell("profile", 0, Cell::live("alice", Timestamp::from_micros(1)))
//!     .build()?;
//! db.apply("users", &write)?;
//! assert_eq!(db.get("users", &key, ClusteringRange::full())?, Some(write.clone()));
//!
//! db.flush("users")?; // now in an sstable
//! assert_eq!(db.metrics().tables[0].sstables, 1);
//! db.close()?;
//! drop(db);
//!
//! let db = Database::open(DatabaseConfig::new(dir.path()))?;
//! assert_eq!(db.get("users", &key, ClusteringRange::full())?, Some(write));
//! db.close()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The write path
//!
//! [`Database::apply`] checks the mutation, enters through the dirty-memory
//! manager's admission (a writer waits while unspooled dirty memory is at
//! the hard limit, at most [`DatabaseConfig::write_timeout`], then fails
//! with an error naming the table), and applies it to the table's active
//! memtable. User tables and system tables ([`TableOptions::system`]) have
//! separate managers and budgets, so system writes never queue behind user
//! writes.
//!
//! # Flushes, and who retries
//!
//! The dirty-memory manager decides when and which memtable to flush
//! ([`FlushPolicy`]: the soft-limit policy by default, or the per-memtable
//! baseline). The database's flush target then installs a fresh active
//! memtable (writes continue at once), seals the old one, and submits a
//! job to the flush scheduler: its data phase streams the memtable into an
//! sstable writer in the table's directory under a flush directory,
//! reporting the memtable memory written to the manager as it goes (so held
//! writers are let in at disk speed), and releases the data-write permit
//! when the data is written; its tail phase commits the sstable (index,
//! summary, fsyncs, renames) on a tail worker while the next flush writes.
//! On commit the sstable joins the table's sstable set, *then* the memtable
//! leaves its list, and a read takes the list's memtables *then* pins the
//! set: a reader sees each row in the memtable, the sstable or both (the
//! merging reader reconciles the duplicate), never in neither, and readers
//! still open on the memtable continue in the sstable. With a row cache the
//! cache takes the memtable's data between the two steps (see below).
//!
//! **Only the dirty-memory manager retries a failed flush**, with a
//! doubling back-off: it is the layer that knows the memtable, holds the
//! data-write permit and the spooled accounting that a failure must give
//! back, and coalesces explicit flush requests, so a retry elsewhere would
//! race it. The flush scheduler never retries; the database only
//! classifies a failure (I/O: transient; data the sstable format refuses:
//! permanent, kept in memory and reported in [`DatabaseMetrics`]). A
//! memtable is never dropped before its sstable is committed.
//!
//! # The row cache
//!
//! Each table has a [`row_cache::RowCache`] (unless
//! [`DatabaseConfig::cache_size`] is [`CacheSize::Off`] or the table is
//! [`TableOptions::uncached`]) in the memtables' logalloc pool, outside the
//! dirty-memory region groups. Its underlying source is a merge of the
//! table's sstables as the list holds them at read time, so it sees every
//! flushed sstable. A read merges every memtable's `make_reader_opt` with
//! the cache's `make_reader_opt` (in place of the sstables): a source that
//! knows it has nothing in the range adds no reader, and a read left with
//! one source reads it directly, without a merge. A table opened without
//! sstables (a new one) gets a cache that knows the whole ring from the
//! start (ScyllaDB's `is_continuous::yes`): reads of absent keys never
//! touch a reader, and every flush's data enters the cache.
//!
//! Every table's cache is in one [`row_cache::CacheTracker`] of the
//! database, as ScyllaDB's caches are in one `cache_tracker` per shard:
//! one logalloc region, one LRU list over every table's partitions, and
//! one budget, the cache share (the pool's room beyond the dirty budgets,
//! [`CacheSize::Auto`], or [`CacheSize::Bytes`]), which bounds the sum of
//! all the tables' caches. Beyond it, and whenever the pool runs dry
//! anyway (a memtable allocation at an unlucky moment), the least recently
//! used partitions of any table are evicted, so a cold table's cache gives
//! its memory to a hot one.
//!
//! A flush with a cache commits in three steps: (1) the sstable joins the
//! table's list while the memtable stays (a reader sees the rows in both,
//! and the merging reader reconciles the duplicate; never in neither);
//! (2) the cache takes the memtable's data (`RowCache::update_by_merge`:
//! the memtable's region merged into the cache's, its partitions adopted
//! where they lie where the cache knows the ring, reconciled with cached
//! partitions, freed elsewhere; `RowCache::update_from`, a copy of its
//! stream, while a reader of the memtable is open; a failure invalidates
//! what it missed and does not fail the flush), with
//! the memtable out of the dirty-memory group but its bytes pinned against
//! the real limit and released as the update passes its partitions
//! (ScyllaDB #1942: a cache update falling behind flushes holds the
//! writers back instead of letting memory overflow, and lets them in as it
//! goes); (3) only then the memtable leaves the list. A compaction job that may have
//! purged tombstones makes the cache forget those keys once its outputs
//! replace its inputs, so the cache never keeps a tombstone the sstables
//! dropped. Dropping a table and closing the
//! database clear its cache. [`CacheMetrics`] are in [`TableMetrics`] and,
//! summed, in [`DatabaseMetrics`].
//!
//! # Durability: the commit log
//!
//! With [`DatabaseConfig::commitlog`] on (the default: periodic, synced
//! every 10 s; or batch, acknowledged once synced; or off), `apply`
//! appends the mutation to the commit log (`commitlog`, in the first data
//! directory's [`COMMITLOG_DIR_NAME`]) before it reaches the memtable.
//! Each memtable remembers exactly which log entries it holds (a
//! `commitlog::ReplayPositionSet`); a committed flush hands that set back
//! to the log, so segments are retired as flushes complete, whatever order
//! writers reached memtables in (a writer that took the old memtable just
//! before a flush installed a new one may append after the new one's
//! writers). A write that fails after its append hands its entry back
//! itself. [`Database::open`] replays
//! the log into the memtables, flushes them, and only then serves;
//! dropping a table logs the drop, so replay never resurrects it. With the
//! commit log off, writes not yet flushed are lost if the process crashes.
//!
//! At its size limit ([`DatabaseConfig::commitlog_size_limit`]) the log
//! asks for the tables holding its oldest segment to be flushed; the
//! database starts those flushes (through the dirty-memory manager, like
//! any explicit flush) and writers wait until segments are retired.
//!
//! Each table incarnation has its own commit-log id: the catalog gives
//! every `create_table` a new generation ([`TableSchema::generation`]),
//! and the id hashes name and generation ([`TableSchema::log_id`]). Replay
//! applies only the entries of the ids the catalog lists, so a dropped
//! table's rows never return, not even into a table created again under
//! its name, and not even if the log's drop record were lost.
//!
//! # Faults of the disk
//!
//! Every file operation goes through [`DatabaseConfig::fs`] (the real file
//! system by default): tests put a disk under the whole database that
//! fails chosen calls (`fs::FaultFs`) or loses what was not synced at a
//! simulated machine crash (`fs::PowerLossFs`). The outcomes:
//!
//! * a commit-log write or sync error stops the log: that write and every
//!   later one fail naming the cause, no fsync is retried on the same
//!   file, and every write acknowledged before is replayed at the next
//!   open (writes resume only after a restart);
//! * a flush I/O error fails the flush naming the file and removes its
//!   files (a committed sstable that then cannot be opened too: left
//!   behind, it came back at the next open, after compaction had purged
//!   the tombstones shadowing its rows); the memtable stays, and the
//!   dirty-memory manager retries with a doubling back-off;
//! * a compaction I/O error abandons the job: outputs not checkpointed are
//!   removed, inputs stay, and a failed check runs again after a back-off;
//! * a read error on an sstable fails the read, naming the file and (in
//!   its cause) the offset;
//! * a refused open changes nothing on disk, the lock files included;
//! * after a machine crash every write acknowledged in batch mode is
//!   replayed, no committed sstable is missing or torn, and no dropped
//!   table's rows return;
//! * a full disk (`ENOSPC`) is [`Error::DiskFull`], naming the directory
//!   that is full and what hit it (the commit log, a table's flush or
//!   compaction); the log then stops as for any write error, a flush keeps
//!   its memtable, a compaction its inputs; resuming without a reopen is
//!   not built yet.
//!
//! The sweeps in `tests/fault_sweep.rs` (each file call failed in turn)
//! and `tests/power_loss_sweep.rs` (a crash at each sync point) show it;
//! the crate's README has the table and the case counts.
//!
//! # Ownership: what open removes
//!
//! [`Database::open`] removes only what the database created and can
//! identify: the leftovers of its unfinished flushes, and the directories
//! of dropped tables whose marker file ([`TABLE_MARKER_FILE_NAME`], written
//! when a table directory is created) names them, and in those only the
//! marker and the sstable files. Anything else in a data or flush
//! directory is left alone. A missing catalog in directories that hold
//! table data (a marked or sstable-holding table directory, or a commit
//! log) is an error, [`Error::CatalogMissing`], and opening changes
//! nothing; [`Database::rebuild_catalog`] is the explicit recovery step.
//! Directories of new databases (no table data) get a new, empty catalog.
//! Table directories without a marker (made before markers existed) are
//! adopted by the table the catalog lists under their name, and otherwise
//! never removed; see the `layout` rules in [`open_table_dirs`].
//!
//! # Also here
//!
//! * [`DatabaseConfig`]: directories, budgets, soft-limit ratio, flush
//!   policy, sstable writer options, the device model ([`DeviceModel`]),
//!   write timeout, commit log mode ([`CommitLogMode`]), row cache size
//!   ([`CacheSize`]).
//! * [`Catalog`]: which tables exist, persisted atomically with a checksum.
//! * [`open_table_dirs`]: each table's sstables in its data and flush
//!   directories, after removing the leftovers of unfinished flushes.
//! * [`DirectoryLock`]: the lock file that refuses a second open of the
//!   same directories, from this process or another.
//! * [`DeviceModel`]: modelled devices (the [`device`] crate's
//!   [`Device`], a [`TokenBucket`] of bandwidth) and which directory is on
//!   which; every sstable write and read (flushes, compaction, reads) and
//!   every commit-log write is charged to its directory's device, and
//!   [`DatabaseMetrics::devices`] says how much went through each and how
//!   long it made the I/O wait.
//! * [`CompactionConfig`]: how tables' sstables are compacted (the
//!   [`compaction`] crate: incremental by default, size-tiered or none;
//!   gc_grace, bandwidth limit); [`Database::compact`] runs a major
//!   compaction. Each data directory's sstables form one
//!   `compaction::SstableSet` (the first also holds the table's separate
//!   flush directories), pinned by reads; compactions write into the data
//!   directory, whichever directory their inputs are in. When a table's
//!   sorted runs pile up, its flushes can wait for its compactions
//!   ([`FlushThrottleConfig`], off by default), and with them the writers,
//!   at the dirty-memory limits: compaction keeps up whatever the write
//!   rate, at the cost of stalls while a long compaction job runs.
//! * [`units`]: parsing of durations with clear errors (the configuration's
//!   spellings, such as [`CommitLogMode::parse`], read them).
//! * Feature `testing`: `Database::set_test_hook` and `Database::crash`,
//!   for tests that pause a thread at a chosen point of the write or flush
//!   path, or stop the database as a crash would; `Database::evict_cache`
//!   and `Database::get_building_every_reader` for the cache's tests and
//!   bench.
#![forbid(unsafe_code)]

mod catalog;
mod config;
mod database;
mod devices;
mod error;
#[cfg(feature = "testing")]
mod hooks;
mod layout;
mod lock;
mod sync;
pub mod units;

pub use catalog::{
    CATALOG_FILE_NAME, Catalog, MAX_TABLE_NAME_LEN, MAX_TABLES, TableOptions, TableSchema,
    validate_table_name,
};
/// The commit log, for [`DatabaseMetrics::commitlog`]'s
/// [`LogStats`](commitlog::LogStats) and [`Database::replay_report`].
pub use commitlog;
/// The compaction crate, for [`CompactionConfig`]'s strategies and clocks.
pub use compaction;
pub use config::{
    CacheSize, CommitLogMode, CorruptionPolicy, DEFAULT_BUDGET, DEFAULT_COMMITLOG_SYNC_PERIOD,
    DEFAULT_SOFT_LIMIT_RATIO, DEFAULT_SYSTEM_BUDGET, DEFAULT_WRITE_TIMEOUT, DatabaseConfig,
    DeviceModel, DeviceSpec, DirectIo, FlushPolicy, MAX_CONCURRENT_FLUSHES, MIN_CACHE_SIZE,
    MIN_DATABASE_BUDGET, PeriodicAck, Placement, check_soft_limit_ratio,
};
pub use database::{
    COMMITLOG_DIR_NAME, CacheMetrics, CompactionConfig, Database, DatabaseMetrics,
    FlushThrottleConfig, SLOW_PHASE, TableCompactionMetrics, TableHandle, TableMetrics,
    TableReader, WritePhase, WritePhases,
};
/// The device crate, for [`DeviceModel`]'s devices and their clocks.
pub use device;
pub use device::{Clock, Device, DeviceStats, ManualClock, SystemClock, TokenBucket};
/// The dirty-memory manager, for [`DatabaseMetrics::user`]'s
/// [`DirtyMemoryMetrics`](dirty_memory::DirtyMemoryMetrics).
pub use dirty_memory;
pub use error::{Error, Result};
#[cfg(feature = "testing")]
pub use hooks::{HookPoint, TestHook};
pub use layout::{
    SstableId, TABLE_MARKER_FILE_NAME, TableFiles, open_table_dirs, orphan_table_dirs,
    read_table_marker, remove_table_dirs, table_dir,
};
pub use lock::{DirectoryLock, LOCK_FILE_NAME};
/// The data model a database takes and returns: mutations, keys, ranges
/// and the fragment streams of [`TableReader`].
pub use mutation;
/// The sstable format, for [`DatabaseConfig::sstable_writer_options`].
pub use sstable;

// The README's example runs as a doc test, so it cannot go stale.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
