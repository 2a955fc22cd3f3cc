//! The commit log: appending, group commit, the size bound, flush requests
//! and segment retirement.
//!
//! One mutex guards the shared state. Writers encode and checksum their
//! payload outside it, then, under it, reserve the next offset of the active
//! segment and copy the framed entry into the pending buffer. A *cycle*
//! takes the whole pending buffer, writes it with one `pwrite` per segment
//! touched (the lock released) and, when a sync is due, fdatasyncs every
//! file written since the last sync, then publishes the new synced position
//! and wakes every writer it covers. One cycle runs at a time
//! (`flusher_busy`). Writers that arrive while a cycle runs fill the next
//! buffer, which the next cycle covers: one fdatasync per group. In
//! `Batch(0)` a writer that finds no cycle running runs one itself, so a
//! lone writer pays no thread handoff; when a cycle ends with entries
//! queued, the flusher thread (woken at every cycle's end) runs the next
//! one unless a newly arrived writer already has. The flusher also runs the
//! cycles of periodic mode and of batch mode with a window, serves
//! buffer-budget waits and does the final sync at close.
//!
//! A writer whose entry is in the next cycle (batch mode, and periodic
//! mode with `PeriodicAck::Written`, whose writers wait for the write)
//! waits on
//! `done[cycle % 2]`, a small mutex and condvar of its own: the end of a
//! cycle wakes exactly the writers it covered, and they return without
//! taking the state lock again. Cycles run one at a time, so only two
//! cycle numbers (the running one and the next) have waiters at any time.
//!
//! With [`Config::preallocate`], a reserve thread keeps the next segment
//! zero-filled and ready under a name of its own; a writer switching
//! segments renames it to the next id, so ids follow the order segments
//! are used in. A writer that finds no reserve ready creates a sparse
//! segment itself rather than wait for the one being made.
//!
//! In periodic mode the fdatasync runs with the writing slot free, and a
//! writer thread writes the pending buffers out every
//! [`Config::write_interval`] meanwhile, so entries reach the OS within
//! milliseconds even then (with `PeriodicAck::Written`, blocking writers
//! run their own write cycles meanwhile, and the thread serves
//! [`CommitLog::add_async`]'s entries, which no thread leads).
//! Retiring a segment (deleting it, or setting it aside if damaged, and
//! syncing the directory) runs with the state lock released: the segments
//! are marked `retiring` under the lock and the result recorded after.
//!
//! The code is split by concern: `append` (placement: size check, buffer
//! budget, finding or making a segment with room, the size limit, the
//! copy), `cycle` (the write-and-sync cycle, batch waits, periodic syncs,
//! the writer thread), `segments` (install, the reserve thread, discard and
//! retire), `requests` (flush requests to the owner); this file holds the
//! shared state and the public [`CommitLog`].

mod append;
mod cycle;
mod durable;
#[cfg(all(loom, test))]
mod loom_tests;
mod requests;
mod segments;
#[cfg(test)]
pub(crate) mod tests;

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::time::Instant;

use mutation::Mutation;

pub use self::append::MutationRef;
use self::append::Payload;
use crate::config::{Config, SyncMode};
use crate::format;
use crate::replay::{self, ReplayReport};
use crate::storage::{ChargedStorage, DirStorage, SegmentFile, Storage};
use crate::sync::{self, Arc, Condvar, Mutex, PlainArc, arc_dyn};
use crate::{Error, ReplayPosition, ReplayPositionSet, TableId};

pub use self::durable::Durable;

/// A request from the log to its owner: flush `table`'s memtables holding
/// entries up to `up_to`; each flush then hands its entries back with
/// [`CommitLog::discard_flushed`]. Entries appended and not yet in a
/// memtable (a writer between its append and its apply) free their
/// segments when that writer hands them on or back, not before; a table
/// the owner no longer has (dropped) may be let go at once with
/// [`CommitLog::discard_completed`]`(table, up_to)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlushRequest {
    /// The table to flush.
    pub table: TableId,
    /// The newest entry of the table in the segments to free.
    pub up_to: ReplayPosition,
}

/// The owner's flush callback; see [`CommitLog::set_flush_handler`].
pub type FlushHandler = dyn Fn(&[FlushRequest]) + Send + Sync;

/// Counters of the log's activity since it was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogStats {
    /// Entries appended.
    pub entries: u64,
    /// Framed bytes appended (entries and segment headers).
    pub bytes: u64,
    /// fdatasync rounds (each syncs every file written since the last).
    pub syncs: u64,
    /// Entries made durable by those syncs; `synced_entries / syncs` is the
    /// mean group size.
    pub synced_entries: u64,
    /// Segment files created.
    pub segments_created: u64,
    /// Segment files deleted (or set aside as damaged) once retired.
    pub segments_retired: u64,
    /// Segment files on disk now, replayed ones included.
    pub segments_on_disk: u64,
    /// Bytes of segment files on disk now.
    pub disk_bytes: u64,
    /// Flush request rounds sent to the owner.
    pub flush_requests: u64,
    /// Periodic-mode appends held until a sync covered them because the
    /// oldest unsynced entry was more than two intervals old (the disk was
    /// not keeping up with the interval).
    pub sync_lag_waits: u64,
    /// Appends that found the unwritten buffers at their budget and waited
    /// for a write-out (or, in periodic mode, wrote the buffers out
    /// themselves) before they could be placed.
    pub budget_waits: u64,
    /// Appends that waited for another writer's switch to a new segment.
    pub rotation_waits: u64,
    /// Appends that waited at the size limit for a segment to be freed.
    pub size_limit_waits: u64,
    /// Microseconds appends spent in those three waits, summed over the
    /// appends (an append that met several counts once in each counter and
    /// its whole wait once here). The sync an append waits for afterwards
    /// (batch mode) is not in it.
    pub room_wait_micros: u64,
}

/// One segment on disk.
#[derive(Debug)]
pub(crate) struct Segment {
    /// Open for writing (segments of this run); `None` for replayed ones.
    file: Option<Arc<dyn SegmentFile>>,
    /// Tables with entries here not yet flushed.
    dirty: HashMap<TableId, Dirty>,
    /// Holds a table drop record: it may go only once no older segment is
    /// left, or replay could bring the dropped data back.
    has_drop: bool,
    /// Bytes allocated (the next entry's offset).
    end: u32,
    /// Bytes known durable.
    synced_end: u32,
    /// No longer the active segment.
    closed: bool,
    /// Replay found damage: set aside instead of deleted when retired.
    damaged: bool,
    /// A retirement is removing the file (the lock released).
    retiring: bool,
    /// Bytes this file takes on disk.
    disk_size: u64,
}

/// What one table still needs of one segment.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Dirty {
    /// Entries appended in this run and not yet handed back by
    /// [`CommitLog::discard_flushed`].
    entries: u64,
    /// Holds entries found by replay, not yet released by
    /// [`CommitLog::discard_completed`].
    replayed: bool,
    /// The highest entry offset (for flush requests).
    newest: u32,
}

impl Dirty {
    /// Replayed entries up to `newest`.
    pub(crate) fn replayed(newest: u32) -> Self {
        Dirty {
            entries: 0,
            replayed: true,
            newest,
        }
    }

    fn is_clean(&self) -> bool {
        self.entries == 0 && !self.replayed
    }
}

/// Bytes waiting to be written at `offset` of `segment`.
#[derive(Debug)]
struct Chunk {
    segment: u64,
    file: Arc<dyn SegmentFile>,
    offset: u32,
    bytes: Vec<u8>,
}

#[derive(Debug)]
struct State {
    segments: BTreeMap<u64, Segment>,
    active: Option<u64>,
    next_id: u64,
    pending: Vec<Chunk>,
    /// Entries in `pending`.
    pending_entries: u64,
    /// Bytes appended and not yet written (pending or being written).
    unwritten: usize,
    /// Every entry ending at or before this is durable.
    synced: ReplayPosition,
    /// The end of what is written to the files.
    written: ReplayPosition,
    /// Files written since the last sync (owned by the running cycle).
    unsynced: BTreeMap<u64, Arc<dyn SegmentFile>>,
    /// Where write-back was last started up to ([`Config::bytes_per_sync`];
    /// owned by the running cycle).
    writeback_from: ReplayPosition,
    /// Entries written since the last sync.
    unsynced_entries: u64,
    /// Periodic mode: when the oldest entry not yet durable was appended
    /// (or an earlier instant); `None` while everything appended is
    /// durable.
    unsynced_since: Option<Instant>,
    flusher_busy: bool,
    /// A periodic sync runs (the lock released, writing free meanwhile).
    syncing: bool,
    /// While `syncing`: the position the running sync makes durable.
    sync_target: ReplayPosition,
    /// The number the next cycle will get; an entry in `pending` is
    /// covered by that cycle (cycles run one at a time, in order).
    next_cycle: u64,
    /// A writer is creating the next segment (lock released).
    rotating: bool,
    /// The next segment, zero-filled ahead of need
    /// ([`Config::preallocate`]); it gets its id when it is installed.
    reserve: Option<Arc<dyn SegmentFile>>,
    /// The reserve thread is creating the reserve (lock released).
    reserving: bool,
    /// Creating a reserve failed while this segment was active: not
    /// retried before the next segment switch.
    reserve_failed_at: Option<u64>,
    sync_requested: bool,
    /// A segment was created since the directory was last synced.
    dir_dirty: bool,
    failed: Option<PlainArc<io::Error>>,
    closing: bool,
    disk_bytes: u64,
    last_sync_start: Option<Instant>,
    stats: LogStats,
    /// Emptied buffers for reuse.
    pool: Vec<Vec<u8>>,
    /// Periodic mode: the tasks of [`Durable`] futures held for a lagging
    /// sync, by key, with the end of their entry; woken when a sync covers
    /// it (or the log fails).
    lag_wakers: durable::Wakers<ReplayPosition>,
}

/// Completed batch cycles of one parity (see [`Shared::done`]).
#[derive(Debug)]
struct GenSlot {
    state: Mutex<GenState>,
    cv: Condvar,
}

#[derive(Debug, Default)]
struct GenState {
    /// The highest finished cycle of this parity: its entries are durable.
    done: u64,
    /// The log failed: no waiting cycle will finish.
    failed: Option<PlainArc<io::Error>>,
    /// The tasks of [`Durable`] futures waiting for a cycle of this parity,
    /// by key; woken (under this slot's lock) when one ends.
    wakers: durable::Wakers<()>,
}

impl GenSlot {
    fn new() -> Self {
        Self {
            state: Mutex::new(GenState::default()),
            cv: Condvar::new(),
        }
    }
}

/// Everything the writers and the flusher share.
pub(crate) struct Shared {
    state: Mutex<State>,
    /// Wakes the flusher.
    work: Condvar,
    /// Wakes writers: buffer space, a sync done, a segment freed, failure.
    progress: Condvar,
    /// Wakes the reserve thread: a segment switch, space freed, close.
    reserver: Condvar,
    /// Wakes the periodic writer thread: a sync started, close.
    writer: Condvar,
    /// Where batch-mode writers wait for the cycle that covers their
    /// entry, by the cycle number's parity: a finished cycle wakes only the
    /// writers it covered, not those queued for the next one, and they
    /// return without taking the state lock again.
    done: [GenSlot; 2],
    storage: Box<dyn Storage>,
    config: Config,
    budget: usize,
    handler: Mutex<Option<Arc<FlushHandler>>>,
    /// The last drop of every table still relevant, as in the drop side
    /// file (held while the file is rewritten).
    drops: Mutex<BTreeMap<TableId, ReplayPosition>>,
}

impl Shared {
    /// The log's directory (where its segments are), for messages.
    pub(super) fn dir(&self) -> PathBuf {
        let seg = self.storage.path(0);
        seg.parent().map_or(seg.clone(), Path::to_path_buf)
    }

    /// The error a writer gets for the log's failure `e`:
    /// [`Error::DiskFull`] naming the directory when the disk was full,
    /// [`Error::Failed`] otherwise.
    pub(super) fn failure(&self, e: &PlainArc<io::Error>) -> Error {
        Error::failure(self.dir(), e)
    }
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("storage", &self.storage)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// A durable, group-committed write-ahead log of mutations in fixed-size
/// segment files. See the crate docs for an example.
///
/// `CommitLog` is `Sync`: share it (`&CommitLog` or an `Arc`) between all
/// writer threads.
#[derive(Debug)]
pub struct CommitLog {
    shared: Arc<Shared>,
    /// The log's threads, taken (and joined) by the first
    /// [`close`](CommitLog::close) or the drop: behind a lock so the log
    /// closes through `&self`, and an owner that shares it needs no lock
    /// of its own around it.
    threads: Mutex<Threads>,
}

/// The threads of a [`CommitLog`].
#[derive(Debug, Default)]
struct Threads {
    flusher: Option<sync::thread::JoinHandle<()>>,
    /// Keeps the reserve segment ([`Config::preallocate`]).
    reserver: Option<sync::thread::JoinHandle<()>>,
    /// Periodic mode: writes pending buffers out while a sync runs
    /// ([`Config::write_interval`]).
    writer: Option<sync::thread::JoinHandle<()>>,
}

impl CommitLog {
    /// Opens the log in `dir` (created if missing): replays every segment
    /// already there into `on_entry(table, mutation, position)`, in order,
    /// and returns the log, ready for appends, with the replay report.
    ///
    /// The replayed segments stay on disk, each marked dirty for the tables
    /// it held, until the owner has flushed those tables and called
    /// [`CommitLog::discard_completed`] (with the highest replayed position
    /// per table), exactly as for new entries. A segment replay found
    /// damaged is renamed `….log.damaged` when retired, not deleted. New
    /// segments get ids above every id on disk and at least the current
    /// time in milliseconds, so ids (and positions) keep growing across
    /// restarts even after every segment was deleted.
    ///
    /// # Errors
    /// An invalid `config` ([`Error::InvalidConfig`]); I/O errors; a
    /// segment of another format version ([`Error::UnsupportedVersion`]);
    /// under [`CorruptionPolicy::Stop`](crate::CorruptionPolicy::Stop),
    /// [`Error::Corrupt`] for damage, before any entry is handed over, but
    /// for a payload that passes its checksums and does not decode: that is
    /// refused when replay reaches it, after the entries before it (see
    /// [`CorruptionPolicy::Stop`](crate::CorruptionPolicy::Stop)).
    pub fn open(
        dir: &Path,
        config: Config,
        on_entry: impl FnMut(TableId, Mutation, ReplayPosition),
    ) -> Result<(CommitLog, ReplayReport), Error> {
        config.validate()?;
        let fs = config.fs.clone();
        // Durably: a directory whose creation a crash undoes takes every
        // acknowledged entry with it.
        fs.create_dir_all_durably(dir)
            .map_err(|e| Error::io(dir, e))?;
        let (files, max_id) = replay::list_segments(&*fs, dir)?;
        let replay::Replayed {
            report,
            summaries,
            drops,
        } = replay::replay_segments(
            &*fs,
            dir,
            &files,
            config.on_corruption,
            config.device.as_deref(),
            on_entry,
        )?;
        let mut segments = BTreeMap::new();
        for (id, s) in summaries {
            let len = u32::try_from(s.len).unwrap_or(u32::MAX);
            segments.insert(
                id,
                Segment {
                    file: None,
                    dirty: s
                        .tables
                        .into_iter()
                        .map(|(t, newest)| (t, Dirty::replayed(newest)))
                        .collect(),
                    has_drop: s.has_drop,
                    end: len,
                    synced_end: len,
                    closed: true,
                    damaged: s.damage.is_some(),
                    retiring: false,
                    disk_size: s.len,
                },
            );
        }
        // Ids never go backwards across restarts, even once every segment
        // has been deleted: owners may keep positions (a table's "flushed
        // up to") beyond the life of the segments. As Cassandra and
        // ScyllaDB do, start at the clock in milliseconds when that is
        // higher than every id on disk.
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let floor = max_id.max(now_ms.saturating_sub(1));
        let storage = Box::new(DirStorage::new(fs, dir, config.uses_direct_io()));
        let log = Self::with_storage(storage, config, segments, floor)?;
        *log.shared.drops.lock() = drops;
        Ok((log, report))
    }

    /// Builds the log over `storage` with segments already on it.
    pub(crate) fn with_storage(
        storage: Box<dyn Storage>,
        config: Config,
        segments: BTreeMap<u64, Segment>,
        max_id_in_use: u64,
    ) -> Result<CommitLog, Error> {
        config.validate()?;
        // With a device model, every segment write is charged to it.
        let storage: Box<dyn Storage> = match &config.device {
            Some(device) => Box::new(ChargedStorage::new(storage, PlainArc::clone(device))),
            None => storage,
        };
        // A reserve left by a crash holds nothing: it was never named.
        storage
            .remove_reserve()
            .map_err(|e| Error::io(storage.path(0).with_file_name(format::RESERVE_FILE_NAME), e))?;
        let max_id = segments
            .keys()
            .next_back()
            .copied()
            .unwrap_or(0)
            .max(max_id_in_use);
        let disk_bytes = segments.values().map(|s| s.disk_size).sum();
        let stats = LogStats {
            segments_on_disk: segments.len() as u64,
            disk_bytes,
            ..LogStats::default()
        };
        let state = State {
            segments,
            active: None,
            next_id: max_id + 1,
            pending: Vec::new(),
            pending_entries: 0,
            unwritten: 0,
            synced: ReplayPosition::new(0, 0),
            written: ReplayPosition::new(0, 0),
            unsynced: BTreeMap::new(),
            writeback_from: ReplayPosition::new(0, 0),
            unsynced_entries: 0,
            unsynced_since: None,
            flusher_busy: false,
            syncing: false,
            sync_target: ReplayPosition::new(0, 0),
            next_cycle: 1,
            rotating: false,
            reserve: None,
            reserving: false,
            reserve_failed_at: None,
            sync_requested: false,
            dir_dirty: false,
            failed: None,
            closing: false,
            disk_bytes,
            last_sync_start: None,
            stats,
            pool: Vec::new(),
            lag_wakers: durable::Wakers::default(),
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            work: Condvar::new(),
            progress: Condvar::new(),
            reserver: Condvar::new(),
            writer: Condvar::new(),
            done: [GenSlot::new(), GenSlot::new()],
            storage,
            budget: config.effective_buffer_budget(),
            config,
            handler: Mutex::new(None),
            drops: Mutex::new(BTreeMap::new()),
        });
        {
            // Segments that hold nothing unflushed go at once.
            let mut st = shared.state.lock();
            shared.retire(&mut st);
        }
        let for_thread = Arc::clone(&shared);
        let flusher = sync::thread::spawn_named("commitlog-flusher".to_string(), move || {
            for_thread.flusher_main();
        })
        .map_err(|e| Error::io("commitlog-flusher thread", e))?;
        let mut threads = Threads {
            flusher: Some(flusher),
            ..Threads::default()
        };
        let log_shared = shared;
        // Made now, so a thread that fails to start below is shut down
        // with the others by the drop.
        let log = CommitLog {
            shared: log_shared,
            threads: Mutex::new(Threads::default()),
        };
        if matches!(log.shared.config.sync, SyncMode::Periodic(_))
            && !log.shared.config.write_interval.is_zero()
        {
            let for_thread = Arc::clone(&log.shared);
            let writer = sync::thread::spawn_named("commitlog-writer".to_string(), move || {
                for_thread.writer_main();
            });
            match writer {
                Ok(writer) => threads.writer = Some(writer),
                Err(e) => {
                    *log.threads.lock() = threads;
                    return Err(Error::io("commitlog-writer thread", e));
                }
            }
        }
        if log.shared.config.preallocates() {
            let for_thread = Arc::clone(&log.shared);
            let reserver = sync::thread::spawn_named("commitlog-reserve".to_string(), move || {
                for_thread.reserve_main();
            });
            match reserver {
                Ok(reserver) => threads.reserver = Some(reserver),
                Err(e) => {
                    *log.threads.lock() = threads;
                    return Err(Error::io("commitlog-reserve thread", e));
                }
            }
        }
        *log.threads.lock() = threads;
        Ok(log)
    }

    /// Registers the owner's flush callback. The log calls it, never while
    /// holding its lock, with the tables to flush so that the oldest
    /// segments can be freed: whenever a new segment opens while the log
    /// holds more than half its size limit, and repeatedly (every
    /// [`Config::flush_request_interval`]) while writers wait at the limit.
    /// Requests repeat until the segments are actually freed, so a request
    /// the owner could not serve at once is not lost.
    ///
    /// The handler runs on a writer's thread, inside [`CommitLog::add`]:
    /// it should start the flushes and return, not wait for them (a flush
    /// that waited for that writer would deadlock). It may call
    /// [`CommitLog::discard_completed`] directly, for a table with nothing
    /// in memory up to the requested position.
    pub fn set_flush_handler(&self, handler: impl Fn(&[FlushRequest]) + Send + Sync + 'static) {
        *self.shared.handler.lock() = Some(arc_dyn!(handler));
    }

    /// Appends `mutation` for `table` and returns its position. The
    /// mutation is a `&Mutation`, or a [`mutation::limits::Checked`] one
    /// whose encoded length the check already measured ([`MutationRef`]).
    ///
    /// In [`SyncMode::Batch`] it returns once an fdatasync covered the
    /// entry; in [`SyncMode::Periodic`] once the entry is in the log's
    /// buffer, or with [`PeriodicAck::Written`](crate::PeriodicAck::Written)
    /// once it is written to its segment file (a `write`, no fdatasync,
    /// shared by every writer queued behind the previous one), so that a
    /// process crash cannot lose it. It waits (up to
    /// [`Config::write_timeout`]) while the unwritten buffers are at their
    /// budget or the log is at its size limit.
    ///
    /// # Errors
    /// [`Error::EntryTooLarge`] (nothing is written), [`Error::LogFull`],
    /// [`Error::BufferTimeout`], [`Error::Failed`] after an earlier I/O
    /// error, [`Error::Closed`], [`Error::Io`] if a new segment cannot be
    /// created.
    pub fn add<'m>(
        &self,
        table: TableId,
        mutation: impl Into<MutationRef<'m>>,
    ) -> Result<ReplayPosition, Error> {
        let wait_sync = matches!(self.shared.config.sync, SyncMode::Batch(_));
        self.shared
            .append(Payload::Mutation(table, mutation.into()), wait_sync)
    }

    /// Appends `mutation` for `table` as [`CommitLog::add`] does (the
    /// entry is placed, and has its position, when this returns) and
    /// returns a future that resolves once the entry is as durable as
    /// `add` makes it before returning: in [`SyncMode::Batch`] once an
    /// fdatasync covered it (the same group-commit cycle as the blocking
    /// writers'), in [`SyncMode::Periodic`] at once, or with
    /// [`PeriodicAck::Written`](crate::PeriodicAck::Written) once it is
    /// written to its segment file (either way, while the sync lags by over
    /// two intervals, once a sync covered it).
    ///
    /// The future is runtime-agnostic (see [`Durable`]); the cycle is run
    /// by the log's flusher thread, which this call wakes (in periodic mode
    /// while a sync runs, by the writer thread, within
    /// [`Config::write_interval`]). Placement itself may block as `add`
    /// does: while the unwritten buffers are at their
    /// budget or the log is at its size limit (up to
    /// [`Config::write_timeout`]).
    ///
    /// Dropping the future unresolved leaves the entry in the log: it may
    /// come back at replay. An owner that will not apply the mutation hands
    /// the entry back with [`CommitLog::discard_flushed`].
    ///
    /// # Errors
    /// The placement errors of [`CommitLog::add`] here; the future fails
    /// with [`Error::Failed`] if a write or sync fails before the entry is
    /// durable.
    pub fn add_async<'m>(
        &self,
        table: TableId,
        mutation: impl Into<MutationRef<'m>>,
    ) -> Result<Durable, Error> {
        // No thread waits to lead the cycle: the flusher runs it.
        let (st, placed) =
            self.shared
                .place(Payload::Mutation(table, mutation.into()), false, true)?;
        let shared = Arc::clone(&self.shared);
        Ok(match self.shared.config.sync {
            SyncMode::Batch(_) => Durable::cycle(shared, placed.pos, placed.cycle_no),
            SyncMode::Periodic(_) if placed.lagging => {
                let mut st = st;
                st.stats.sync_lag_waits += 1;
                st.sync_requested = true;
                self.shared.work.notify_one();
                self.shared.progress.notify_all();
                Durable::synced(shared, placed.pos, placed.end)
            }
            SyncMode::Periodic(_) if self.shared.config.periodic_acks_written() => {
                Durable::cycle(shared, placed.pos, placed.cycle_no)
            }
            SyncMode::Periodic(_) => Durable::ready(shared, placed.pos),
        })
    }

    /// Appends several mutations, in order, and returns their positions.
    ///
    /// Each is its own entry, exactly as if added by [`CommitLog::add`] one
    /// after the other (replay yields them one by one; a crash may keep any
    /// prefix of the batch), but the caller waits once: in
    /// [`SyncMode::Batch`] until one fdatasync covered them all, so a writer
    /// with many mutations pays one wakeup rather than one per mutation.
    ///
    /// # Errors
    /// [`Error::EntryTooLarge`] for any of them before anything is written.
    /// If appending stops part-way (the log full, the buffer wait timed out,
    /// a segment that could not be created, the log failed or closed),
    /// [`Error::BatchIncomplete`] says how many entries were appended, the
    /// first ones of the batch, with the cause as its source; those stand as
    /// entries of the log (durable once a later sync covers them:
    /// [`CommitLog::sync`]). The errors of [`CommitLog::add`] otherwise.
    pub fn add_batch(
        &self,
        entries: &[(TableId, &Mutation)],
    ) -> Result<Vec<ReplayPosition>, Error> {
        let payloads: Vec<Payload<'_>> = entries
            .iter()
            .map(|&(table, mutation)| Payload::Mutation(table, mutation.into()))
            .collect();
        for payload in &payloads {
            self.shared.check_entry_size(payload)?;
        }
        let batch = matches!(self.shared.config.sync, SyncMode::Batch(_));
        // In `Batch(0)` and periodic mode with `PeriodicAck::Written` this
        // writer runs the covering cycle itself unless one is running:
        // entries are left for it rather than handed to the flusher one by
        // one.
        let notify = match self.shared.config.sync {
            SyncMode::Batch(w) => !w.is_zero(),
            SyncMode::Periodic(_) => !self.shared.config.periodic_acks_written(),
        };
        let mut positions = Vec::with_capacity(payloads.len());
        let mut last = None;
        for &payload in &payloads {
            // The previous entry's guard goes before the next entry locks.
            drop(last.take());
            match self.shared.place(payload, false, notify) {
                Ok((st, placed)) => {
                    positions.push(placed.pos);
                    last = Some((st, placed));
                }
                Err(source) if positions.is_empty() => return Err(source),
                Err(source) => {
                    return Err(Error::BatchIncomplete {
                        appended: positions.len(),
                        total: payloads.len(),
                        source: Box::new(source),
                    });
                }
            }
        }
        let Some((mut st, placed)) = last else {
            return Ok(positions);
        };
        if !batch && placed.lagging {
            // A sync covering the last entry has written them all.
            self.shared.hold_for_lagging_sync(&mut st, placed.end)?;
            return Ok(positions);
        }
        if !batch && !self.shared.config.periodic_acks_written() {
            return Ok(positions);
        }
        // The cycle taking the last entry takes every one before it.
        self.shared
            .wait_cycle(st, placed.cycle_no, placed.end)
            .map(|()| positions)
    }

    /// Logs that `table` was dropped and forgets its unflushed entries:
    /// replay skips every entry of `table` before this record, so the
    /// dropped data cannot come back (not even into a new table with the
    /// same id). Returns once the record is durable, in every sync mode.
    ///
    /// # Errors
    /// As [`CommitLog::add`].
    pub fn drop_table(&self, table: TableId) -> Result<ReplayPosition, Error> {
        self.shared.append(Payload::Drop(table), true)
    }

    /// Hands back `table`'s entries in `set`: they are durable elsewhere
    /// (the memtable that held them is flushed), or they reached no
    /// memtable at all (a write that failed after its append). Segments
    /// left with no entry of any table, fully synced and no longer active
    /// are deleted.
    ///
    /// Each entry [`CommitLog::add`] appends pins its segment for its table
    /// until it is handed back, so a flush releases exactly what its
    /// memtable holds, whatever order entries reached memtables in. An
    /// entry handed back twice (or after [`discard_completed`](Self::discard_completed)
    /// or [`drop_table`](Self::drop_table) forgot it) is not counted
    /// again.
    pub fn discard_flushed(&self, table: TableId, set: &ReplayPositionSet) {
        if set.is_empty() {
            return;
        }
        let mut st = self.shared.state.lock();
        self.shared.discard_set(&mut st, table, set);
    }

    /// Forgets every entry of `table` at or before `up_to`, whichever
    /// memtable holds it: for entries found by replay (once the memtables
    /// they were replayed into are flushed), and for a table the owner
    /// dropped. Segments left with no unflushed table, fully synced and no
    /// longer active are deleted.
    ///
    /// The caller must know that no entry of `table` at or before `up_to`
    /// is still needed: one in a memtable that is not flushed, or in flight
    /// between a writer's append and its apply, is lost at a crash. While
    /// writers run, release their entries with
    /// [`discard_flushed`](Self::discard_flushed) instead.
    pub fn discard_completed(&self, table: TableId, up_to: ReplayPosition) {
        let mut st = self.shared.state.lock();
        self.shared.discard(&mut st, table, up_to);
    }

    /// Makes every entry appended so far durable (in any sync mode).
    ///
    /// # Errors
    /// [`Error::Failed`] if a write or sync failed ([`Error::DiskFull`],
    /// naming the directory, when the disk was full); [`Error::Closed`].
    pub fn sync(&self) -> Result<(), Error> {
        let mut st = self.shared.state.lock();
        let Some(active) = st.active else {
            return Ok(());
        };
        let end = ReplayPosition::new(active, st.segments[&active].end);
        if st.synced >= end {
            return Ok(());
        }
        // A running periodic sync that covers everything appended needs no
        // successor (a request left behind would sync again later).
        if !(st.syncing && st.sync_target >= end) {
            st.sync_requested = true;
            self.shared.work.notify_one();
        }
        self.shared.wait_synced(&mut st, end)
    }

    /// Waits until the reserve thread is idle: a reserve is ready, or none
    /// is wanted or possible now.
    #[cfg(test)]
    pub(crate) fn wait_reserve_settled(&self) {
        let mut st = self.shared.state.lock();
        while st.reserving
            || (st.reserve.is_none()
                && st.active.is_some()
                && st.reserve_failed_at != st.active
                && !st.closing
                && st.disk_bytes + u64::from(self.shared.config.segment_size)
                    <= self.shared.config.total_size_limit)
        {
            self.shared.progress.wait(&mut st);
        }
    }

    /// Waits until `n` appends have been held for a lagging sync; panics
    /// after 20 s.
    #[cfg(test)]
    pub(crate) fn wait_sync_lag_waits(&self, n: u64) {
        let deadline = Instant::now() + std::time::Duration::from_secs(20);
        let mut st = self.shared.state.lock();
        while st.stats.sync_lag_waits < n {
            assert!(Instant::now() < deadline, "no append was held in 20 s");
            self.shared.progress.wait_until(&mut st, deadline);
        }
    }

    /// Counters since the log was opened.
    pub fn stats(&self) -> LogStats {
        self.shared.state.lock().stats
    }

    /// The tables with unflushed entries per segment on disk (segment id →
    /// tables), oldest first.
    pub fn dirty_tables(&self) -> Vec<(u64, Vec<TableId>)> {
        let st = self.shared.state.lock();
        st.segments
            .iter()
            .map(|(&id, s)| {
                let mut t: Vec<_> = s.dirty.keys().copied().collect();
                t.sort_unstable();
                (id, t)
            })
            .collect()
    }

    /// Writes and syncs everything appended, stops the log's threads and
    /// retires the segments no table needs. Through `&self`, so an owner
    /// that shares the log (an `Arc` its flushes hold too) closes it in
    /// place; later appends fail as the log is closing. The first call
    /// does the work; a later one (or the drop) returns `Ok` at once.
    ///
    /// # Errors
    /// [`Error::Failed`] if a write or sync failed ([`Error::DiskFull`],
    /// naming the directory, when the disk was full).
    pub fn close(&self) -> Result<(), Error> {
        self.shutdown()
    }

    fn shutdown(&self) -> Result<(), Error> {
        let threads = std::mem::take(&mut *self.threads.lock());
        let Some(flusher) = threads.flusher else {
            return Ok(());
        };
        {
            let mut st = self.shared.state.lock();
            st.closing = true;
            self.shared.work.notify_one();
        }
        // The flusher exits only after the final write and sync; a panic in
        // it would already have poisoned nothing (the facade's locks do not
        // poison), so its result carries no information.
        let _ = flusher.join();
        if let Some(writer) = threads.writer {
            // It sees `closing` at its next wake.
            self.shared.writer.notify_one();
            let _ = writer.join();
        }
        if let Some(reserver) = threads.reserver {
            // It sees `closing` once done with a creation under way.
            self.shared.reserver.notify_one();
            let _ = reserver.join();
        }
        let mut st = self.shared.state.lock();
        if st.reserve.take().is_some() {
            // Never used: nothing to keep (a reserve file that cannot be
            // removed now goes at the next open).
            self.shared.forget_reserve(&mut st);
        }
        if let Some(active) = st.active.take()
            && let Some(seg) = st.segments.get_mut(&active)
        {
            seg.closed = true;
        }
        self.shared.retire(&mut st);
        self.shared.progress.notify_all();
        match &st.failed {
            Some(e) => Err(self.shared.failure(e)),
            None => Ok(()),
        }
    }
}

impl Drop for CommitLog {
    fn drop(&mut self) {
        // Errors were reported to the writers that hit them.
        let _ = self.shutdown();
    }
}
