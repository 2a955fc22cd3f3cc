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
//! A batch-mode writer whose entry is in the next cycle waits on
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

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

use mutation::Mutation;

use crate::config::{Config, SyncMode};
use crate::format::{self, FRAMING, HEADER_LEN, KIND_DROP, KIND_MUTATION};
use crate::replay::{self, ReplayReport};
use crate::storage::{DirStorage, SegmentFile, Storage};
use crate::sync::{self, Arc, Condvar, Mutex, MutexGuard, PlainArc};
use crate::{Error, ReplayPosition, ReplayPositionSet, TableId};

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
}

/// One segment on disk.
#[derive(Debug)]
pub(crate) struct Segment {
    /// Open for writing (segments of this run); `None` for replayed ones.
    file: Option<PlainArc<dyn SegmentFile>>,
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
    file: PlainArc<dyn SegmentFile>,
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
    unsynced: BTreeMap<u64, PlainArc<dyn SegmentFile>>,
    /// Entries written since the last sync.
    unsynced_entries: u64,
    /// Periodic mode: when the oldest entry not yet durable was appended
    /// (or an earlier instant); `None` while everything appended is
    /// durable.
    unsynced_since: Option<Instant>,
    flusher_busy: bool,
    /// A periodic sync runs (the lock released, writing free meanwhile).
    syncing: bool,
    /// The number the next cycle will get; an entry in `pending` is
    /// covered by that cycle (cycles run one at a time, in order).
    next_cycle: u64,
    /// A writer is creating the next segment (lock released).
    rotating: bool,
    /// The next segment, zero-filled ahead of need
    /// ([`Config::preallocate`]); it gets its id when it is installed.
    reserve: Option<PlainArc<dyn SegmentFile>>,
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
}

/// The payload of `table`'s entry for `mutation`: kind, table, encoding.
fn mutation_payload(table: TableId, mutation: &Mutation) -> Vec<u8> {
    let mut payload = Vec::with_capacity(format::PAYLOAD_PREFIX + mutation.encoded_len());
    payload.extend_from_slice(&format::payload_prefix(KIND_MUTATION, table));
    mutation.encode_into(&mut payload);
    payload
}

/// Where [`Shared::place`] put an entry.
#[derive(Debug, Clone, Copy)]
struct Placed {
    pos: ReplayPosition,
    /// Just past the entry: durable once `synced` reaches it.
    end: ReplayPosition,
    /// The cycle that will write (and in batch mode sync) it.
    cycle_no: u64,
    /// Periodic mode: the oldest unsynced entry is over two intervals old.
    lagging: bool,
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
    /// Where batch-mode writers wait for the cycle that covers their
    /// entry, by the cycle number's parity: a finished cycle wakes only the
    /// writers it covered, not those queued for the next one, and they
    /// return without taking the state lock again.
    done: [GenSlot; 2],
    storage: Box<dyn Storage>,
    config: Config,
    budget: usize,
    handler: Mutex<Option<PlainArc<FlushHandler>>>,
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
    flusher: Option<sync::thread::JoinHandle<()>>,
    /// Keeps the reserve segment ([`Config::preallocate`]).
    reserver: Option<sync::thread::JoinHandle<()>>,
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
    /// segment of another format version ([`Error::UnsupportedVersion`]).
    pub fn open(
        dir: &Path,
        config: Config,
        on_entry: impl FnMut(TableId, Mutation, ReplayPosition),
    ) -> Result<(CommitLog, ReplayReport), Error> {
        config.validate()?;
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let (files, max_id) = replay::list_segments(dir)?;
        let (report, summaries) = replay::replay_segments(&files, on_entry)?;
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
        let storage = Box::new(DirStorage::new(dir));
        let log = Self::with_storage(storage, config, segments, floor)?;
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
            unsynced_entries: 0,
            unsynced_since: None,
            flusher_busy: false,
            syncing: false,
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
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            work: Condvar::new(),
            progress: Condvar::new(),
            reserver: Condvar::new(),
            done: [GenSlot::new(), GenSlot::new()],
            storage,
            budget: config.effective_buffer_budget(),
            config,
            handler: Mutex::new(None),
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
        let mut log = CommitLog {
            shared,
            flusher: Some(flusher),
            reserver: None,
        };
        if log.shared.config.preallocates() {
            let for_thread = Arc::clone(&log.shared);
            let reserver = sync::thread::spawn_named("commitlog-reserve".to_string(), move || {
                for_thread.reserve_main();
            })
            .map_err(|e| Error::io("commitlog-reserve thread", e))?;
            log.reserver = Some(reserver);
        }
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
        *self.shared.handler.lock() = Some(PlainArc::new(handler));
    }

    /// Appends `mutation` for `table` and returns its position.
    ///
    /// In [`SyncMode::Batch`] it returns once an fdatasync covered the
    /// entry; in [`SyncMode::Periodic`] once the entry is in the log's
    /// buffer. It waits (up to [`Config::write_timeout`]) while the
    /// unwritten buffers are at their budget or the log is at its size
    /// limit.
    ///
    /// # Errors
    /// [`Error::EntryTooLarge`] (nothing is written), [`Error::LogFull`],
    /// [`Error::BufferTimeout`], [`Error::Failed`] after an earlier I/O
    /// error, [`Error::Closed`], [`Error::Io`] if a new segment cannot be
    /// created.
    pub fn add(&self, table: TableId, mutation: &Mutation) -> Result<ReplayPosition, Error> {
        let payload = mutation_payload(table, mutation);
        let wait_sync = matches!(self.shared.config.sync, SyncMode::Batch(_));
        self.shared
            .append(table, KIND_MUTATION, &payload, wait_sync)
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
        let limit = self.shared.config.max_payload();
        let mut payloads = Vec::with_capacity(entries.len());
        for &(table, mutation) in entries {
            let payload = mutation_payload(table, mutation);
            if payload.len() > limit {
                return Err(Error::EntryTooLarge {
                    table,
                    size: payload.len(),
                    limit,
                    segment_size: self.shared.config.segment_size,
                    framing: FRAMING,
                });
            }
            payloads.push((table, payload));
        }
        let batch = matches!(self.shared.config.sync, SyncMode::Batch(_));
        // In `Batch(0)` this writer runs the covering cycle itself unless
        // one is running: entries are left for it rather than handed to the
        // flusher one by one.
        let notify = self.shared.config.sync != SyncMode::Batch(Duration::ZERO);
        let mut positions = Vec::with_capacity(payloads.len());
        let mut last = None;
        for (table, payload) in &payloads {
            // The previous entry's guard goes before the next entry locks.
            drop(last.take());
            match self
                .shared
                .place(*table, KIND_MUTATION, payload, false, notify)
            {
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
        if batch {
            self.shared
                .wait_batch(st, placed.cycle_no, placed.end)
                .map(|()| positions)
        } else {
            if placed.lagging {
                self.shared.hold_for_lagging_sync(&mut st, placed.end)?;
            }
            Ok(positions)
        }
    }

    /// Logs that `table` was dropped and forgets its unflushed entries:
    /// replay skips every entry of `table` before this record, so the
    /// dropped data cannot come back (not even into a new table with the
    /// same id). Returns once the record is durable, in every sync mode.
    ///
    /// # Errors
    /// As [`CommitLog::add`].
    pub fn drop_table(&self, table: TableId) -> Result<ReplayPosition, Error> {
        let payload = format::payload_prefix(KIND_DROP, table);
        self.shared.append(table, KIND_DROP, &payload, true)
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
    /// [`Error::Failed`] if a write or sync failed; [`Error::Closed`].
    pub fn sync(&self) -> Result<(), Error> {
        let mut st = self.shared.state.lock();
        let Some(active) = st.active else {
            return Ok(());
        };
        let end = ReplayPosition::new(active, st.segments[&active].end);
        st.sync_requested = true;
        self.shared.work.notify_one();
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
        let deadline = Instant::now() + Duration::from_secs(20);
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

    /// Writes and syncs everything appended, stops the flusher and retires
    /// the segments no table needs.
    ///
    /// # Errors
    /// [`Error::Failed`] if a write or sync failed.
    pub fn close(mut self) -> Result<(), Error> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<(), Error> {
        let Some(flusher) = self.flusher.take() else {
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
        if let Some(reserver) = self.reserver.take() {
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
            Some(e) => Err(Error::Failed(PlainArc::clone(e))),
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

impl Shared {
    fn handler(&self) -> Option<PlainArc<FlushHandler>> {
        self.handler.lock().clone()
    }

    fn check_usable(st: &State) -> Result<(), Error> {
        if let Some(e) = &st.failed {
            return Err(Error::Failed(PlainArc::clone(e)));
        }
        if st.closing {
            return Err(Error::Closed);
        }
        Ok(())
    }

    /// Appends one entry (`payload` = kind, table, body).
    fn append(
        &self,
        table: TableId,
        kind: u8,
        payload: &[u8],
        wait_sync: bool,
    ) -> Result<ReplayPosition, Error> {
        // In `Batch(0)` a waiting writer runs the cycle itself: no need to
        // wake the flusher.
        let writer_leads = wait_sync && self.config.sync == SyncMode::Batch(Duration::ZERO);
        let (mut st, placed) = self.place(table, kind, payload, wait_sync, !writer_leads)?;
        let Placed {
            pos,
            end,
            cycle_no,
            lagging,
        } = placed;
        if wait_sync && kind == KIND_MUTATION {
            // Only batch mode waits for a mutation's sync.
            return self.wait_batch(st, cycle_no, end).map(|()| pos);
        }
        if wait_sync {
            self.wait_synced(&mut st, end)?;
        } else if lagging {
            self.hold_for_lagging_sync(&mut st, end)?;
        }
        if kind == KIND_DROP {
            // Entries of `table` written after the record (a new table
            // with the same id) stay.
            self.discard(&mut st, table, pos);
        }
        Ok(pos)
    }

    /// The oldest unsynced entry is over two intervals old: the disk is not
    /// keeping up. Holds the writer until a sync covers its entry (ending
    /// at `end`), so that what a crash can lose stays about two intervals
    /// of writes (Cassandra's periodic sync lag block) instead of growing
    /// without bound.
    fn hold_for_lagging_sync<'a>(
        &'a self,
        st: &mut MutexGuard<'a, State>,
        end: ReplayPosition,
    ) -> Result<(), Error> {
        st.stats.sync_lag_waits += 1;
        st.sync_requested = true;
        self.work.notify_one();
        // (Also wakes whoever waits on the stats, as tests do.)
        self.progress.notify_all();
        self.wait_synced(st, end)
    }

    /// Checks, frames and copies one entry (`payload` = kind, table, body)
    /// into the pending buffer, waiting for buffer space and for a segment
    /// with room as needed, and returns with the state lock held. Wakes the
    /// flusher if `notify_flusher` and no cycle runs; a drop record that
    /// will be waited for (`wait_sync`) requests a sync.
    fn place<'a>(
        &'a self,
        table: TableId,
        kind: u8,
        payload: &[u8],
        wait_sync: bool,
        notify_flusher: bool,
    ) -> Result<(MutexGuard<'a, State>, Placed), Error> {
        let limit = self.config.max_payload();
        if payload.len() > limit {
            return Err(Error::EntryTooLarge {
                table,
                size: payload.len(),
                limit,
                segment_size: self.config.segment_size,
                framing: FRAMING,
            });
        }
        let crc = crc32c::crc32c(payload);
        let framed = payload.len() + FRAMING;
        let mut deadline: Option<Instant> = None;
        let mut next_request: Option<Instant> = None;
        let mut rotated = false;
        let mut st = self.state.lock();
        loop {
            Self::check_usable(&st)?;
            if st.unwritten > 0 && st.unwritten + framed > self.budget {
                if st.syncing && !st.flusher_busy {
                    // The flusher is in a periodic fdatasync: write the
                    // buffers out here rather than wait for it to end.
                    self.cycle(&mut st, false, Instant::now());
                    continue;
                }
                if !st.flusher_busy {
                    self.work.notify_one();
                }
                let d = *deadline.get_or_insert_with(|| Instant::now() + self.config.write_timeout);
                if self.progress.wait_until(&mut st, d)
                    && st.unwritten > 0
                    && st.unwritten + framed > self.budget
                {
                    return Err(Error::BufferTimeout {
                        budget: self.budget,
                        timeout: self.config.write_timeout,
                    });
                }
                continue;
            }
            let room = st.active.is_some_and(|a| {
                st.segments[&a].end as usize + framed <= self.config.segment_size as usize
            });
            if room {
                break;
            }
            if st.rotating {
                // Another writer is switching to the next segment.
                self.progress.wait(&mut st);
                continue;
            }
            let size = self.config.segment_size;
            if let Some(file) = st.reserve.take() {
                // The zero-filled reserve: the switch is a rename (the lock
                // released), made durable by the next sync's directory
                // sync, before any entry in it is acknowledged.
                let id = st.next_id;
                st.next_id += 1;
                st.rotating = true;
                let renamed = MutexGuard::unlocked(&mut st, || self.storage.install_reserve(id));
                st.rotating = false;
                self.progress.notify_all();
                // The reserve thread waits for switches to end.
                self.reserver.notify_one();
                match renamed {
                    Ok(()) => self.install_segment(&mut st, id, file),
                    Err(e) => {
                        self.forget_reserve(&mut st);
                        return Err(Error::io(self.storage.path(id), e));
                    }
                }
                rotated = true;
                continue;
            }
            if st.disk_bytes + u64::from(size) <= self.config.total_size_limit {
                // Create the next segment with the lock released, so that
                // writers with room, waiters and cycles are not held up by
                // the file system. The id is used up even if creation
                // fails, so a half-created file never blocks a retry.
                let id = st.next_id;
                st.next_id += 1;
                st.rotating = true;
                st.disk_bytes += u64::from(size);
                let created = MutexGuard::unlocked(&mut st, || self.storage.create(id, size));
                st.rotating = false;
                self.progress.notify_all();
                // The reserve thread waits for switches to end.
                self.reserver.notify_one();
                match created {
                    Ok(file) => {
                        Self::count_created(&mut st);
                        self.install_segment(&mut st, id, PlainArc::from(file));
                    }
                    Err(e) => {
                        st.disk_bytes -= u64::from(size);
                        // An empty leftover replays as nothing; remove it
                        // if we can.
                        let _ = self.storage.remove(id);
                        return Err(Error::io(self.storage.path(id), e));
                    }
                }
                rotated = true;
                continue;
            }
            // At the size limit: make closed segments retirable (sync them),
            // ask the owner to flush, wait for a segment to go.
            st.sync_requested = true;
            self.work.notify_one();
            let now = Instant::now();
            let d = *deadline.get_or_insert(now + self.config.write_timeout);
            if now >= d {
                return Err(Error::LogFull {
                    disk_bytes: st.disk_bytes,
                    limit: self.config.total_size_limit,
                    timeout: self.config.write_timeout,
                });
            }
            if next_request.is_none_or(|t| now >= t) {
                next_request = Some(now + self.config.flush_request_interval);
                let requests = self.flush_requests(&mut st, u64::from(self.config.segment_size));
                if !requests.is_empty()
                    && let Some(h) = self.handler()
                {
                    drop(st);
                    h(&requests);
                    st = self.state.lock();
                    continue;
                }
            }
            let wake = next_request.map_or(d, |t| t.min(d));
            self.progress.wait_until(&mut st, wake);
        }
        // Reserve and copy.
        let id = st.active.expect("a segment with room was found above");
        let st_ref = &mut *st;
        let seg = st_ref
            .segments
            .get_mut(&id)
            .expect("the active segment is on record");
        let offset = seg.end;
        seg.end += framed as u32;
        let file = PlainArc::clone(seg.file.as_ref().expect("the active segment is open"));
        if kind == KIND_MUTATION {
            let e = seg.dirty.entry(table).or_default();
            e.entries += 1;
            e.newest = e.newest.max(offset);
        } else {
            // The table's entries are released only once the drop record
            // is durable (below): retiring a segment earlier could leave a
            // crash with part of the dropped table's data and no drop.
            seg.has_drop = true;
        }
        let pool = &mut st_ref.pool;
        let chunk = match st_ref.pending.last_mut() {
            Some(c) if c.segment == id => c,
            _ => {
                let mut bytes = pool.pop().unwrap_or_default();
                bytes.clear();
                st_ref.pending.push(Chunk {
                    segment: id,
                    file,
                    offset,
                    bytes,
                });
                st_ref.pending.last_mut().expect("just pushed")
            }
        };
        format::put_entry(&mut chunk.bytes, id, payload, crc);
        st.unwritten += framed;
        st.pending_entries += 1;
        st.stats.entries += 1;
        st.stats.bytes += framed as u64;
        // The next cycle to start takes this entry with the rest of
        // `pending`.
        let cycle_no = st.next_cycle;
        // Periodic mode bounds how long an entry may stay unsynced (below);
        // batch mode waits for every sync anyway and reads no clock here.
        let lagging = match self.config.sync {
            SyncMode::Periodic(interval) => {
                let now = Instant::now();
                let oldest = *st.unsynced_since.get_or_insert(now);
                now.saturating_duration_since(oldest) > interval.saturating_mul(2)
            }
            SyncMode::Batch(_) => false,
        };
        let pos = ReplayPosition::new(id, offset);
        let end = ReplayPosition::new(id, offset + framed as u32);
        if wait_sync && kind == KIND_DROP {
            st.sync_requested = true;
        }
        if !st.flusher_busy && notify_flusher {
            self.work.notify_one();
        }
        if rotated {
            let requests = self.flush_requests(&mut st, 0);
            if !requests.is_empty()
                && let Some(h) = self.handler()
            {
                drop(st);
                h(&requests);
                st = self.state.lock();
            }
        }
        Ok((
            st,
            Placed {
                pos,
                end,
                cycle_no,
                lagging,
            },
        ))
    }

    /// Forgets `table`'s entries up to `up_to` and retires what that frees.
    fn discard(&self, st: &mut State, table: TableId, up_to: ReplayPosition) {
        for (&id, seg) in st.segments.range_mut(..=up_to.segment) {
            if id < up_to.segment
                || seg
                    .dirty
                    .get(&table)
                    .is_some_and(|d| d.newest <= up_to.offset)
            {
                seg.dirty.remove(&table);
            }
        }
        self.retire(st);
    }

    /// Hands back `table`'s entries in `set` and retires what that frees.
    fn discard_set(&self, st: &mut State, table: TableId, set: &ReplayPositionSet) {
        for (segment, n) in set.segments() {
            if let Some(seg) = st.segments.get_mut(&segment)
                && let Some(d) = seg.dirty.get_mut(&table)
            {
                // Saturating: entries already forgotten by a drop (or by
                // `discard_completed`) are not counted twice.
                d.entries = d.entries.saturating_sub(n);
                if d.is_clean() {
                    seg.dirty.remove(&table);
                }
            }
        }
        self.retire(st);
    }

    /// Waits until `end` is durable. In `Batch(0)` the waiter runs the
    /// write-and-sync cycle itself when none is running.
    fn wait_synced<'a>(
        &'a self,
        st: &mut MutexGuard<'a, State>,
        end: ReplayPosition,
    ) -> Result<(), Error> {
        let lead = self.config.sync == SyncMode::Batch(Duration::ZERO);
        while st.synced < end {
            if let Some(e) = &st.failed {
                return Err(Error::Failed(PlainArc::clone(e)));
            }
            if lead && !st.flusher_busy {
                // Group commit without a handoff: the first waiter to find
                // no cycle running writes and syncs everything pending,
                // its own entry and those of every writer queued behind.
                self.cycle(st, true, Instant::now());
                continue;
            }
            self.progress.wait(st);
        }
        Ok(())
    }

    /// Waits until the batch cycle `cycle_no`, which covers the entry ending at
    /// `end`, has synced it. In `Batch(0)` the writer runs that cycle
    /// itself when none is running; otherwise it waits, without the state
    /// lock, on the slot of `cycle_no`'s parity, which only that cycle's end
    /// (or a failure) wakes.
    fn wait_batch<'a>(
        &'a self,
        mut st: MutexGuard<'a, State>,
        cycle_no: u64,
        end: ReplayPosition,
    ) -> Result<(), Error> {
        let lead = self.config.sync == SyncMode::Batch(Duration::ZERO);
        if lead && !st.flusher_busy && st.failed.is_none() && st.synced < end {
            // Group commit without a handoff: the cycle takes everything
            // pending, this entry and those of every writer queued behind.
            self.cycle(&mut st, true, Instant::now());
        }
        if st.synced >= end {
            return Ok(());
        }
        if let Some(e) = &st.failed {
            return Err(Error::Failed(PlainArc::clone(e)));
        }
        drop(st);
        let slot = &self.done[(cycle_no % 2) as usize];
        let mut s = slot.state.lock();
        loop {
            if s.done >= cycle_no {
                return Ok(());
            }
            if let Some(e) = &s.failed {
                return Err(Error::Failed(PlainArc::clone(e)));
            }
            slot.cv.wait(&mut s);
        }
    }

    /// Publishes the end of cycle `cycle_no` (durable, or the log failed) to
    /// the writers waiting in [`Shared::wait_batch`].
    fn publish(&self, cycle_no: u64, failed: Option<&PlainArc<io::Error>>) {
        let slots: &[GenSlot] = match failed {
            Some(_) => &self.done,
            None => std::slice::from_ref(&self.done[(cycle_no % 2) as usize]),
        };
        for slot in slots {
            let mut s = slot.state.lock();
            match failed {
                Some(e) => s.failed = Some(PlainArc::clone(e)),
                None => s.done = s.done.max(cycle_no),
            }
            drop(s);
            slot.cv.notify_all();
        }
    }

    /// Makes the new segment `id` (already counted in `disk_bytes`) the
    /// active one and closes the previous one.
    fn install_segment(&self, st: &mut State, id: u64, file: PlainArc<dyn SegmentFile>) {
        let size = self.config.segment_size;
        if let Some(old) = st.active.replace(id)
            && let Some(seg) = st.segments.get_mut(&old)
        {
            seg.closed = true;
        }
        let mut bytes = st.pool.pop().unwrap_or_default();
        bytes.clear();
        bytes.extend_from_slice(&format::header(id, size));
        st.pending.push(Chunk {
            segment: id,
            file: PlainArc::clone(&file),
            offset: 0,
            bytes,
        });
        st.unwritten += HEADER_LEN;
        st.segments.insert(
            id,
            Segment {
                file: Some(file),
                dirty: HashMap::new(),
                has_drop: false,
                end: HEADER_LEN as u32,
                synced_end: 0,
                closed: false,
                damaged: false,
                disk_size: u64::from(size),
            },
        );
        st.dir_dirty = true;
        st.stats.bytes += HEADER_LEN as u64;
    }

    /// Counts a segment file just created (already in `disk_bytes`).
    fn count_created(st: &mut State) {
        st.stats.segments_created += 1;
        st.stats.segments_on_disk += 1;
        st.stats.disk_bytes = st.disk_bytes;
    }

    /// Removes the unused reserve segment (already taken out of
    /// `reserve`). If the file cannot be removed it is still forgotten
    /// here; the next open removes it.
    fn forget_reserve(&self, st: &mut State) {
        let _ = self.storage.remove_reserve();
        st.disk_bytes -= u64::from(self.config.segment_size);
        st.stats.segments_on_disk -= 1;
        st.stats.segments_retired += 1;
        st.stats.disk_bytes = st.disk_bytes;
    }

    /// The reserve thread: once the log is in use, keeps one zero-filled
    /// segment ready for the next switch, within the size limit.
    fn reserve_main(&self) {
        let size = self.config.segment_size;
        let mut st = self.state.lock();
        loop {
            if st.closing || st.failed.is_some() {
                return;
            }
            // Not while a switch renames the previous reserve: a new one
            // would take its name.
            let wanted = st.reserve.is_none()
                && !st.reserving
                && !st.rotating
                && st.active.is_some()
                && st.reserve_failed_at != st.active
                && st.disk_bytes + u64::from(size) <= self.config.total_size_limit;
            if !wanted {
                self.reserver.wait(&mut st);
                continue;
            }
            st.reserving = true;
            st.disk_bytes += u64::from(size);
            let created = MutexGuard::unlocked(&mut st, || self.storage.create_reserve(size));
            st.reserving = false;
            match created {
                Ok(file) => {
                    Self::count_created(&mut st);
                    st.reserve = Some(PlainArc::from(file));
                }
                Err(_) => {
                    // Writers create segments themselves meanwhile; the
                    // error, if it persists, reaches them there.
                    st.disk_bytes -= u64::from(size);
                    let _ = self.storage.remove_reserve();
                    st.reserve_failed_at = st.active;
                }
            }
            self.progress.notify_all();
        }
    }

    /// The flushes that would free the oldest segments: when the log
    /// (plus `extra` bytes about to be needed) is above half its limit,
    /// every table dirty in the oldest closed segments whose sizes cover
    /// the excess, with its newest position there.
    fn flush_requests(&self, st: &mut State, extra: u64) -> Vec<FlushRequest> {
        let threshold = self.config.total_size_limit / 2;
        let projected = st.disk_bytes + extra;
        if projected <= threshold {
            return Vec::new();
        }
        let excess = projected - threshold;
        let mut covered = 0u64;
        let mut wanted: BTreeMap<TableId, ReplayPosition> = BTreeMap::new();
        for (&id, seg) in &st.segments {
            if covered >= excess || Some(id) == st.active {
                break;
            }
            covered += seg.disk_size;
            for (&table, d) in &seg.dirty {
                let pos = ReplayPosition::new(id, d.newest);
                let e = wanted.entry(table).or_insert(pos);
                *e = (*e).max(pos);
            }
        }
        if !wanted.is_empty() {
            st.stats.flush_requests += 1;
        }
        wanted
            .into_iter()
            .map(|(table, up_to)| FlushRequest { table, up_to })
            .collect()
    }

    /// Deletes (or sets aside, if damaged) every segment that is closed,
    /// fully synced and needed by no table; a segment holding a drop record
    /// goes only once no older segment is left.
    fn retire(&self, st: &mut State) {
        let mut older_kept = false;
        let mut gone = Vec::new();
        for (&id, seg) in &st.segments {
            let free = seg.closed && seg.dirty.is_empty() && seg.synced_end >= seg.end;
            if free && !(seg.has_drop && older_kept) {
                gone.push(id);
            } else {
                older_kept = true;
            }
        }
        if gone.is_empty() {
            return;
        }
        let mut removed_any = false;
        for id in gone {
            let damaged = st.segments[&id].damaged;
            let result = if damaged {
                self.storage.quarantine(id)
            } else {
                self.storage.remove(id)
            };
            if result.is_err() {
                // Kept on record and retried at the next retirement; a
                // segment that cannot be removed only costs disk space.
                // A drop record behind it must stay too.
                break;
            }
            removed_any = true;
            if let Some(seg) = st.segments.remove(&id) {
                st.disk_bytes -= seg.disk_size;
            }
            st.stats.segments_retired += 1;
        }
        if removed_any {
            // Make the removals durable before anything relies on them (a
            // removed segment coming back could replay a dropped table).
            let _ = self.storage.sync_dir();
            st.stats.segments_on_disk = st.segments.len() as u64 + u64::from(st.reserve.is_some());
            st.stats.disk_bytes = st.disk_bytes;
            self.progress.notify_all();
            self.reserver.notify_one();
        }
    }

    /// The flusher thread: writes pending buffers and syncs per the mode.
    /// In `Batch(0)` writers run the cycles themselves (see
    /// [`Shared::wait_synced`]); the flusher then only serves buffer-budget
    /// waits, explicit sync requests and the final sync at close.
    fn flusher_main(&self) {
        let mut st = self.state.lock();
        loop {
            if st.failed.is_some() {
                // Nothing more can be written; drop what is pending so
                // writers waiting for buffer space see the failure.
                let dropped: usize = st.pending.drain(..).map(|c| c.bytes.len()).sum();
                st.unwritten -= dropped;
                self.progress.notify_all();
                if st.closing {
                    return;
                }
                self.work.wait(&mut st);
                continue;
            }
            if st.flusher_busy {
                // A writer is running a cycle; it notifies when done.
                self.work.wait(&mut st);
                continue;
            }
            let now = Instant::now();
            let has_pending = !st.pending.is_empty();
            let something_unsynced = has_pending || !st.unsynced.is_empty();
            let sync_now;
            match self.config.sync {
                SyncMode::Batch(window) => {
                    if !(something_unsynced || st.sync_requested) {
                        if st.closing {
                            return;
                        }
                        self.work.wait(&mut st);
                        continue;
                    }
                    let earliest = st.last_sync_start.map(|t| t + window);
                    if let Some(earliest) = earliest.filter(|&e| !window.is_zero() && now < e)
                        && !st.closing
                        && !st.sync_requested
                    {
                        self.work.wait_until(&mut st, earliest);
                        continue;
                    }
                    sync_now = true;
                }
                SyncMode::Periodic(interval) => {
                    let due = st.last_sync_start.is_none_or(|t| now >= t + interval);
                    sync_now = something_unsynced && (due || st.sync_requested || st.closing)
                        || st.sync_requested;
                    if !has_pending && !sync_now {
                        if st.closing {
                            return;
                        }
                        match st.last_sync_start {
                            Some(t) if !st.unsynced.is_empty() => {
                                self.work.wait_until(&mut st, t + interval);
                            }
                            _ => self.work.wait(&mut st),
                        }
                        continue;
                    }
                }
            }
            self.cycle(&mut st, sync_now, now);
        }
    }

    /// One cycle, run by whoever finds no cycle running (the flusher, or a
    /// batch-mode writer waiting for its sync): take everything pending,
    /// write it, sync if `sync_now`, publish the new synced position and
    /// wake every waiter. The lock is released during the I/O.
    fn cycle<'a>(&'a self, st: &mut MutexGuard<'a, State>, sync_now: bool, now: Instant) {
        debug_assert!(!st.flusher_busy, "one cycle at a time");
        if sync_now && matches!(self.config.sync, SyncMode::Periodic(_)) {
            // Write, then sync without holding up writes (see
            // `sync_phase`). The write-only cycle returns with the lock
            // held throughout, so no other cycle starts in between.
            self.cycle(st, false, now);
            if st.failed.is_none() {
                self.sync_phase(st, now);
            }
            return;
        }
        let chunks = std::mem::take(&mut st.pending);
        st.unsynced_entries += std::mem::take(&mut st.pending_entries);
        // The files written since the last sync travel with the cycle; no
        // one else touches them while `flusher_busy` is set.
        let mut unsynced = std::mem::take(&mut st.unsynced);
        let mut written = st.written;
        let cycle_no = st.next_cycle;
        st.next_cycle += 1;
        let sync_dir = sync_now && std::mem::take(&mut st.dir_dirty);
        if sync_now {
            st.sync_requested = false;
            st.last_sync_start = Some(now);
        }
        st.flusher_busy = true;
        let result = MutexGuard::unlocked(st, || {
            for c in &chunks {
                c.file.write_at(u64::from(c.offset), &c.bytes)?;
                unsynced.insert(c.segment, PlainArc::clone(&c.file));
                written = ReplayPosition::new(c.segment, c.offset + c.bytes.len() as u32);
            }
            if sync_now {
                if sync_dir {
                    self.storage.sync_dir()?;
                }
                for f in unsynced.values() {
                    f.sync_data()?;
                }
            }
            Ok::<(), io::Error>(())
        });
        let total: usize = chunks.iter().map(|c| c.bytes.len()).sum();
        st.flusher_busy = false;
        st.unwritten -= total;
        st.written = written;
        for mut c in chunks {
            if st.pool.len() < 4 && c.bytes.capacity() <= 4 << 20 {
                c.bytes.clear();
                st.pool.push(std::mem::take(&mut c.bytes));
            }
        }
        match result {
            Err(e) => {
                let e = PlainArc::new(e);
                self.publish(cycle_no, Some(&e));
                st.failed = Some(e);
            }
            Ok(()) if sync_now => {
                let entries = std::mem::take(&mut st.unsynced_entries);
                self.note_synced(st, written, entries, now);
                self.publish(cycle_no, None);
                self.retire(st);
            }
            Ok(()) => st.unsynced = unsynced,
        }
        self.progress.notify_all();
        self.work.notify_one();
    }

    /// A periodic sync: everything written so far (the flusher has just
    /// written `pending` out) is fdatasynced with the writing slot
    /// (`flusher_busy`) free, so that while a long sync runs (seconds, when
    /// gigabytes wait in the page cache) writers at the buffer budget write
    /// the buffers out themselves instead of waiting for it. Entries
    /// written meanwhile are left to the next sync.
    fn sync_phase<'a>(&'a self, st: &mut MutexGuard<'a, State>, now: Instant) {
        debug_assert!(!st.syncing, "one sync at a time");
        st.syncing = true;
        st.sync_requested = false;
        st.last_sync_start = Some(now);
        let target = st.written;
        let files = std::mem::take(&mut st.unsynced);
        let entries = std::mem::take(&mut st.unsynced_entries);
        let sync_dir = std::mem::take(&mut st.dir_dirty);
        let result = MutexGuard::unlocked(st, || {
            if sync_dir {
                self.storage.sync_dir()?;
            }
            for f in files.values() {
                f.sync_data()?;
            }
            Ok::<(), io::Error>(())
        });
        st.syncing = false;
        match result {
            Err(e) => st.failed = Some(PlainArc::new(e)),
            Ok(()) => {
                self.note_synced(st, target, entries, now);
                self.retire(st);
            }
        }
        self.progress.notify_all();
        self.work.notify_one();
    }

    /// Records that a sync started at `now` made everything up to `upto`
    /// (`entries` entries) durable.
    fn note_synced(&self, st: &mut State, upto: ReplayPosition, entries: u64, now: Instant) {
        st.synced = st.synced.max(upto);
        st.stats.syncs += 1;
        st.stats.synced_entries += entries;
        // Anything appended or written after the sync started is not
        // covered, and no older than its start.
        st.unsynced_since = (!st.pending.is_empty() || !st.unsynced.is_empty()).then_some(now);
        let upto = st.synced;
        for (&id, seg) in st.segments.range_mut(..=upto.segment) {
            if seg.file.is_none() {
                continue;
            }
            seg.synced_end = if id < upto.segment {
                seg.end
            } else {
                seg.synced_end.max(upto.offset)
            };
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::storage::mem::MemStorage;
    use mutation::{Cell, DecoratedKey, Timestamp};

    pub(crate) fn mutation(key: &str, value: usize) -> Mutation {
        Mutation::builder(DecoratedKey::from_bytes(key.to_string()).unwrap())
            .cell(
                "c",
                0,
                Cell::live(vec![7u8; value], Timestamp::from_micros(1)),
            )
            .build()
            .unwrap()
    }

    pub(crate) fn mem_log(config: Config) -> (CommitLog, MemStorage) {
        let storage = MemStorage::default();
        let log =
            CommitLog::with_storage(Box::new(storage.clone()), config, BTreeMap::new(), 0).unwrap();
        (log, storage)
    }

    fn small(sync: SyncMode) -> Config {
        Config {
            segment_size: 4096,
            total_size_limit: 4 * 4096,
            sync,
            write_timeout: Duration::from_secs(5),
            preallocate: crate::Preallocate::Never,
            ..Config::default()
        }
    }

    #[test]
    fn batch_add_is_durable_on_return() {
        let (log, storage) = mem_log(small(SyncMode::Batch(Duration::ZERO)));
        let pos = log.add(1, &mutation("k", 10)).unwrap();
        let s = storage.0.lock();
        let durable = &s.durable[&pos.segment];
        assert_ne!(
            durable[pos.offset as usize..pos.offset as usize + 4],
            [0; 4]
        );
    }

    #[test]
    fn oversized_entry_is_refused_before_writing() {
        let (log, storage) = mem_log(small(SyncMode::Batch(Duration::ZERO)));
        let err = log.add(3, &mutation("k", 3000)).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with("commit log entry of ") && msg.contains("exceeds the 2028-byte limit (half the 4096-byte segment less 20 bytes of framing)"),
            "{msg}"
        );
        assert!(storage.0.lock().files.is_empty());
        assert_eq!(log.stats().entries, 0);
        // The largest accepted entry fits.
        let m = mutation("k", 2028 - 9 - (mutation("k", 0).encoded_len()));
        assert_eq!(m.encoded_len() + 9, 2028);
        log.add(3, &m).unwrap();
    }

    /// Adds entries of table 0 until one lands beyond segment `first`;
    /// returns that entry's segment.
    fn add_until_the_segment_switches(log: &CommitLog, first: u64) -> u64 {
        loop {
            let segment = log.add(0, &mutation("k", 500)).unwrap().segment;
            if segment != first {
                return segment;
            }
        }
    }

    #[test]
    fn switches_take_the_prefilled_reserve_and_close_removes_an_unused_one() {
        let config = Config {
            preallocate: crate::Preallocate::Always,
            total_size_limit: 8 * 4096,
            ..small(SyncMode::Batch(Duration::ZERO))
        };
        let (log, storage) = mem_log(config);
        let first = log.add(0, &mutation("k", 500)).unwrap().segment;
        log.wait_reserve_settled();
        // The first segment is made by the writer (sparse); the next one
        // waits, prefilled, under its own name.
        assert_eq!(
            storage.0.lock().created.clone(),
            BTreeMap::from([(first, false)])
        );
        assert!(storage.0.lock().reserve_key.is_some());
        assert_eq!(log.stats().segments_on_disk, 2);
        assert_eq!(log.stats().disk_bytes, 2 * 4096);
        let last = add_until_the_segment_switches(&log, first);
        // The switch renamed the reserve to the next id.
        assert_eq!(last, first + 1);
        assert_eq!(storage.0.lock().created.get(&last), Some(&true));
        log.wait_reserve_settled();
        assert!(storage.0.lock().reserve_key.is_some(), "a new reserve");
        assert_eq!(log.stats().segments_created, 3);
        log.close().unwrap();
        // The unused reserve is gone; the two segments with entries stay.
        let s = storage.0.lock();
        assert_eq!(s.reserve_key, None);
        assert_eq!(
            s.files.keys().copied().collect::<Vec<_>>(),
            vec![first, last]
        );
    }

    #[test]
    fn no_reserve_beyond_the_size_limit_and_writers_outlive_failed_creations() {
        let config = Config {
            preallocate: crate::Preallocate::Always,
            total_size_limit: 2 * 4096,
            ..small(SyncMode::Batch(Duration::ZERO))
        };
        let (log, storage) = mem_log(config);
        let first = log.add(0, &mutation("k", 500)).unwrap().segment;
        log.wait_reserve_settled();
        // Two segments fill the limit: the reserve is the second.
        assert!(storage.0.lock().reserve_key.is_some());
        add_until_the_segment_switches(&log, first);
        log.wait_reserve_settled();
        assert_eq!(storage.0.lock().reserve_key, None, "no third: at the limit");
        drop(log);

        let config = Config {
            preallocate: crate::Preallocate::Always,
            ..small(SyncMode::Batch(Duration::ZERO))
        };
        let (log, storage) = mem_log(config);
        let mut current = log.add(0, &mutation("k", 500)).unwrap().segment;
        storage.0.lock().fail_creates = true;
        // Whether the switch finds a reserve (its rename fails) or makes a
        // segment itself (its creation fails), the writer gets the I/O
        // error, named, and the log is not failed for good.
        loop {
            match log.add(0, &mutation("k", 500)) {
                Ok(p) => current = p.segment,
                Err(e) => {
                    assert!(matches!(e, Error::Io { .. }), "{e}");
                    break;
                }
            }
        }
        log.wait_reserve_settled();
        storage.0.lock().fail_creates = false;
        let next = log.add(0, &mutation("k", 500)).unwrap();
        assert!(next.segment > current);
        log.close().unwrap();
        assert_eq!(storage.0.lock().reserve_key, None);
    }

    #[test]
    fn a_reserve_left_by_a_crash_is_removed_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let config = Config {
            preallocate: crate::Preallocate::Always,
            ..small(SyncMode::Batch(Duration::ZERO))
        };
        let (log, _) = CommitLog::open(dir.path(), config.clone(), |_, _, _| {}).unwrap();
        let pos = log.add(7, &mutation("k", 500)).unwrap();
        log.wait_reserve_settled();
        assert_eq!(log.stats().segments_on_disk, 2);
        // What a crash now leaves: a copy of the directory.
        let image = tempfile::tempdir().unwrap();
        for e in std::fs::read_dir(dir.path()).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), image.path().join(e.file_name())).unwrap();
        }
        drop(log);
        let reserve = image.path().join(format::RESERVE_FILE_NAME);
        assert!(reserve.exists());
        let mut seen = Vec::new();
        let (log, report) =
            CommitLog::open(image.path(), config, |t, _, p| seen.push((t, p))).unwrap();
        assert_eq!(seen, vec![(7, pos)]);
        assert_eq!(report.segments, 1);
        assert!(
            report.damage.is_empty() && report.torn.is_empty(),
            "{report:?}"
        );
        assert!(!reserve.exists());
        assert_eq!(log.stats().segments_on_disk, 1);
    }

    #[test]
    fn segments_retire_when_every_table_is_flushed() {
        let (log, storage) = mem_log(small(SyncMode::Batch(Duration::ZERO)));
        let mut last = Vec::new();
        for i in 0..18 {
            last.push(log.add(i % 2, &mutation("k", 500)).unwrap());
        }
        assert!(log.stats().segments_created >= 3);
        let first_seg = last[0].segment;
        // Table 0 alone flushed: nothing goes.
        log.discard_completed(0, last[16]);
        assert!(storage.0.lock().files.contains_key(&first_seg));
        log.discard_completed(1, last[17]);
        // Every closed segment is gone; the active one stays.
        let files: Vec<u64> = storage.0.lock().files.keys().copied().collect();
        assert_eq!(files, vec![last[17].segment]);
        assert_eq!(log.stats().segments_on_disk, 1);
    }

    /// The lost-write race of issue 18, at the log's level: an entry
    /// appended before another can land in a newer memtable. The older
    /// memtable's flush hands back exactly its own entries, so the segment
    /// holding the newer memtable's older entry stays.
    #[test]
    fn a_flush_releases_exactly_the_entries_its_memtable_holds() {
        let (log, storage) = mem_log(small(SyncMode::Batch(Duration::ZERO)));
        // Writer B's entry p2 and the rest of the first segment go to the
        // newer memtable M2; writer A's later entry p3 to the older M1.
        let p2 = log.add(0, &mutation("k", 500)).unwrap();
        let mut m2 = ReplayPositionSet::from(p2);
        let p3 = loop {
            let p = log.add(0, &mutation("k", 500)).unwrap();
            if p.segment != p2.segment {
                break p;
            }
            m2.insert(p);
        };
        let m1 = ReplayPositionSet::from(p3);
        // The second segment closes too.
        let mut m3 = ReplayPositionSet::new();
        loop {
            let p = log.add(1, &mutation("k", 500)).unwrap();
            m3.insert(p);
            if p.segment != p3.segment {
                break;
            }
        }
        log.discard_flushed(1, &m3);
        // M1 is flushed: it holds the newest entry of table 0 in log order,
        // yet p2 is still needed.
        log.discard_flushed(0, &m1);
        assert!(storage.0.lock().files.contains_key(&p2.segment));
        assert_eq!(log.dirty_tables()[0], (p2.segment, vec![0]));
        // A set handed back twice counts once.
        log.discard_flushed(0, &m1);
        assert!(storage.0.lock().files.contains_key(&p2.segment));
        // M2 flushed: its segment goes.
        log.discard_flushed(0, &m2);
        assert!(!storage.0.lock().files.contains_key(&p2.segment));
    }

    #[test]
    fn io_failure_is_sticky_and_named() {
        let (log, storage) = mem_log(small(SyncMode::Batch(Duration::ZERO)));
        log.add(1, &mutation("k", 10)).unwrap();
        storage.0.lock().fail_writes = true;
        let err = log.add(1, &mutation("k", 10)).unwrap_err();
        assert!(matches!(err, Error::Failed(_)), "{err}");
        let cause = std::error::Error::source(&err).expect("the I/O error is the source");
        assert!(
            cause.to_string().contains("injected write failure"),
            "{cause}"
        );
        storage.0.lock().fail_writes = false;
        assert!(matches!(
            log.add(1, &mutation("k", 10)),
            Err(Error::Failed(_))
        ));
    }

    #[test]
    fn a_failed_segment_creation_is_reported_and_not_sticky() {
        let (log, storage) = mem_log(small(SyncMode::Batch(Duration::ZERO)));
        storage.0.lock().fail_creates = true;
        let err = log.add(1, &mutation("k", 10)).unwrap_err();
        assert_eq!(err.to_string(), "commit log I/O error on mem:1");
        let cause = std::error::Error::source(&err).expect("the I/O error is the source");
        assert_eq!(cause.to_string(), "injected create failure");
        storage.0.lock().fail_creates = false;
        let pos = log.add(1, &mutation("k", 10)).unwrap();
        assert_eq!(pos.segment, 2);
    }

    #[test]
    fn a_slow_disk_makes_writers_wait_at_the_buffer_budget() {
        let mut c = small(SyncMode::Periodic(Duration::from_secs(3600)));
        c.buffer_budget = Some(2048);
        c.write_timeout = Duration::from_millis(100);
        let (log, storage) = mem_log(c);
        storage.0.lock().stall = true;
        // The first entry is accepted at once (periodic mode); the flusher
        // takes it and hangs in the write, so its bytes stay unwritten.
        log.add(1, &mutation("a", 1200)).unwrap();
        let err = log.add(1, &mutation("b", 1200)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "commit log write buffers stayed at their 2048-byte budget for 100ms: the disk is not keeping up"
        );
        storage.unstall();
        log.add(1, &mutation("b", 1200)).unwrap();
        log.close().unwrap();
    }

    #[test]
    fn periodic_add_returns_before_the_sync_and_sync_makes_it_durable() {
        let (log, storage) = mem_log(small(SyncMode::Periodic(Duration::from_secs(3600))));
        // The first cycle syncs (no sync yet); afterwards an hour must pass.
        log.add(1, &mutation("a", 10)).unwrap();
        log.sync().unwrap();
        let pos = log.add(1, &mutation("b", 10)).unwrap();
        let at = pos.offset as usize;
        let in_durable = |s: &MemStorage| {
            s.0.lock()
                .durable
                .get(&pos.segment)
                .is_some_and(|d| d[at..at + 4] != [0; 4])
        };
        assert!(!in_durable(&storage), "not synced before the interval");
        log.sync().unwrap();
        assert!(in_durable(&storage));
        let stats = log.stats();
        assert_eq!((stats.entries, stats.synced_entries), (2, 2));
    }

    /// Periodic mode with 1 MiB segments, room for 64 of them and a
    /// buffer budget of `budget` bytes.
    fn roomy_periodic(interval: Duration, budget: usize) -> Config {
        Config {
            segment_size: 1 << 20,
            total_size_limit: 64 << 20,
            buffer_budget: Some(budget),
            ..small(SyncMode::Periodic(interval))
        }
    }

    #[test]
    fn periodic_writers_wait_for_a_sync_that_lags_two_intervals() {
        use std::sync::atomic::{AtomicBool, Ordering as O};
        let config = roomy_periodic(Duration::from_millis(1), 64 << 20);
        let (log, storage) = mem_log(config);
        let log = std::sync::Arc::new(log);
        // The disk stops: nothing is written, so nothing is synced.
        storage.0.lock().stall = true;
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let writer = {
            let (log, storage, stop) = (log.clone(), storage.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut appended = 0u64;
                loop {
                    let pos = log.add(1, &mutation("k", 10)).unwrap();
                    appended += 1;
                    if stop.load(O::SeqCst) {
                        // The one append in flight when the test stopped
                        // the writer was the held one: durable on return.
                        let s = storage.0.lock();
                        let d = &s.durable[&pos.segment];
                        let at = pos.offset as usize;
                        let h = format::parse_entry_header(&d[at..at + format::ENTRY_HEADER_LEN]);
                        assert!(h.is_some_and(|h| h.segment == pos.segment));
                        return appended;
                    }
                }
            })
        };
        // Appends return at once until the oldest unsynced one is two
        // intervals old; then the writer is held.
        log.wait_sync_lag_waits(1);
        stop.store(true, O::SeqCst);
        storage.unstall();
        let appended = writer.join().unwrap();
        assert!(appended >= 2, "earlier appends returned at once");
        let stats = log.stats();
        assert_eq!(stats.sync_lag_waits, 1);
        assert_eq!(stats.entries, appended);
    }

    #[test]
    fn a_batch_is_durable_on_return_with_one_sync() {
        let (log, storage) = mem_log(small(SyncMode::Batch(Duration::ZERO)));
        assert_eq!(log.add_batch(&[]).unwrap(), vec![]);
        let ms: Vec<Mutation> = (0..5).map(|i| mutation(&format!("k{i}"), 100)).collect();
        let entries: Vec<(TableId, &Mutation)> = ms
            .iter()
            .enumerate()
            .map(|(i, m)| (i as TableId, m))
            .collect();
        let positions = log.add_batch(&entries).unwrap();
        assert_eq!(positions.len(), 5);
        assert!(positions.windows(2).all(|w| w[0] < w[1]));
        let s = storage.0.lock();
        for p in &positions {
            let d = &s.durable[&p.segment];
            let at = p.offset as usize;
            let h = format::parse_entry_header(&d[at..at + format::ENTRY_HEADER_LEN]);
            assert!(
                h.is_some_and(|h| h.segment == p.segment),
                "{p:?} not durable"
            );
        }
        drop(s);
        let stats = log.stats();
        assert_eq!(
            (stats.entries, stats.synced_entries, stats.syncs),
            (5, 5, 1)
        );
    }

    #[test]
    fn a_batch_with_an_oversized_entry_writes_nothing() {
        let (log, _) = mem_log(small(SyncMode::Batch(Duration::ZERO)));
        let (ok, big) = (mutation("a", 10), mutation("b", 3000));
        let e = log.add_batch(&[(1, &ok), (2, &ok), (3, &big)]).unwrap_err();
        assert!(matches!(e, Error::EntryTooLarge { table: 3, .. }), "{e}");
        assert_eq!(log.stats().entries, 0);
    }

    #[test]
    fn a_batch_stopped_by_a_full_log_says_how_many_entries_went_in() {
        let config = Config {
            write_timeout: Duration::from_millis(20),
            ..small(SyncMode::Batch(Duration::ZERO))
        };
        let (log, _) = mem_log(config);
        let m = mutation("k", 500);
        let entries = vec![(1, &m); 40];
        match log.add_batch(&entries) {
            Err(Error::BatchIncomplete {
                appended,
                total,
                source,
            }) => {
                assert_eq!(total, 40);
                assert!(appended > 0 && appended < 40, "{appended}");
                assert!(matches!(*source, Error::LogFull { .. }), "{source}");
                assert_eq!(log.stats().entries, appended as u64);
                // What went in stands: a sync makes it durable.
                log.sync().unwrap();
                assert_eq!(log.stats().synced_entries, appended as u64);
            }
            other => panic!("{other:?}"),
        }
        // Nothing appended at all: the cause itself.
        let e = log.add_batch(&entries).unwrap_err();
        assert!(matches!(e, Error::LogFull { .. }), "{e}");
    }

    #[test]
    fn a_periodic_batch_returns_before_the_sync() {
        let (log, _) = mem_log(small(SyncMode::Periodic(Duration::from_secs(3600))));
        log.add(1, &mutation("a", 10)).unwrap();
        log.sync().unwrap();
        let m = mutation("b", 10);
        let positions = log.add_batch(&[(1, &m), (2, &m)]).unwrap();
        assert!(positions[0] < positions[1]);
        assert_eq!(
            log.stats().synced_entries,
            1,
            "not synced before the interval"
        );
        log.sync().unwrap();
        assert_eq!(log.stats().synced_entries, 3);
    }

    #[test]
    fn periodic_writers_write_their_buffers_out_while_a_long_sync_runs() {
        let config = roomy_periodic(Duration::from_secs(3600), 1 << 19);
        let (log, storage) = mem_log(config);
        let log = std::sync::Arc::new(log);
        log.add(1, &mutation("a", 1000)).unwrap();
        storage.0.lock().stall_syncs = true;
        let syncer = {
            let log = log.clone();
            std::thread::spawn(move || log.sync())
        };
        storage.wait_for_a_stalled_sync();
        // The fdatasync is stuck; appends of twice the buffer budget still
        // go through: the writers write the buffers out themselves.
        let positions: Vec<ReplayPosition> = (0..1000)
            .map(|_| log.add(1, &mutation("b", 1000)).unwrap())
            .collect();
        // Early ones were written out (the last ones may still wait in the
        // buffer, below the budget).
        let early = positions[100];
        let written = storage.0.lock().files[&early.segment].clone();
        let at = early.offset as usize;
        let h = format::parse_entry_header(&written[at..at + format::ENTRY_HEADER_LEN]);
        assert!(h.is_some_and(|h| h.segment == early.segment), "written");
        assert!(
            log.stats().synced_entries <= 1,
            "the stuck sync covers none of them"
        );
        storage.unstall();
        syncer.join().unwrap().unwrap();
        log.sync().unwrap();
        assert_eq!(log.stats().synced_entries, 1001);
    }

    #[test]
    fn batch_with_a_window_groups_writers() {
        let (log, _) = mem_log(small(SyncMode::Batch(Duration::from_millis(5))));
        let log = PlainArc::new(log);
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let log = PlainArc::clone(&log);
                std::thread::spawn(move || {
                    for i in 0..10 {
                        log.add(t, &mutation(&format!("{t}-{i}"), 20)).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let stats = log.stats();
        assert_eq!(stats.synced_entries, 40);
        assert!(stats.syncs < 40, "{stats:?}");
    }

    #[test]
    fn a_drop_releases_only_the_entries_before_it() {
        let (log, _) = mem_log(small(SyncMode::Batch(Duration::ZERO)));
        let first = log.add(1, &mutation("a", 10)).unwrap();
        log.add(2, &mutation("b", 10)).unwrap();
        log.drop_table(1).unwrap();
        assert_eq!(log.dirty_tables(), vec![(first.segment, vec![2])]);
        // A new table with the same id: its entries are kept.
        log.add(1, &mutation("c", 10)).unwrap();
        assert_eq!(log.dirty_tables(), vec![(first.segment, vec![1, 2])]);
    }

    #[test]
    fn full_log_times_out_and_asks_for_flushes() {
        let mut c = small(SyncMode::Batch(Duration::ZERO));
        c.write_timeout = Duration::from_millis(200);
        c.flush_request_interval = Duration::from_millis(20);
        let (log, _storage) = mem_log(c);
        let asked = PlainArc::new(Mutex::new(Vec::new()));
        let a = PlainArc::clone(&asked);
        log.set_flush_handler(move |r| a.lock().extend_from_slice(r));
        let err = loop {
            match log.add(5, &mutation("k", 900)) {
                Ok(_) => {}
                Err(e) => break e,
            }
        };
        assert!(matches!(err, Error::LogFull { .. }), "{err}");
        assert!(err.to_string().contains("16384-byte limit"), "{err}");
        let asked = asked.lock();
        // Asked repeatedly while waiting, always for table 5.
        assert!(asked.len() >= 2, "{:?}", *asked);
        assert!(asked.iter().all(|r| r.table == 5));
    }
}

#[cfg(all(loom, test))]
mod loom_tests {
    //! Loom models of the group-commit handoff, running the real writer
    //! and flusher code over the in-memory store.

    use std::collections::BTreeMap;
    use std::time::Duration;

    use super::tests::mutation;
    use super::*;
    use crate::storage::mem::MemStorage;

    fn model(f: impl Fn() + Sync + Send + 'static) {
        model_with_preemptions(2, f);
    }

    /// A model explored with at least `bound` preemptions (more if
    /// `LOOM_MAX_PREEMPTIONS` asks for more).
    fn model_with_preemptions(bound: usize, f: impl Fn() + Sync + Send + 'static) {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(b.preemption_bound.map_or(bound, |env| env.max(bound)));
        b.check(f);
    }

    fn config(sync: SyncMode) -> Config {
        Config {
            segment_size: 4096,
            total_size_limit: 4 * 4096,
            sync,
            preallocate: crate::Preallocate::Never,
            ..Config::default()
        }
    }

    /// True if the entry at `pos` is in the durable image of its segment.
    fn durable(storage: &MemStorage, pos: ReplayPosition) -> bool {
        let s = storage.0.lock();
        s.durable.get(&pos.segment).is_some_and(|d| {
            let at = pos.offset as usize;
            format::parse_entry_header(&d[at..at + format::ENTRY_HEADER_LEN])
                .is_some_and(|h| h.segment == pos.segment)
        })
    }

    /// A `Batch(0)` log over `storage`.
    fn batch_log(storage: &MemStorage) -> PlainArc<CommitLog> {
        PlainArc::new(
            CommitLog::with_storage(
                Box::new(storage.clone()),
                config(SyncMode::Batch(Duration::ZERO)),
                BTreeMap::new(),
                0,
            )
            .unwrap(),
        )
    }

    /// A `Batch(0)` log over a fresh in-memory store, and a thread adding
    /// one entry of table 1 to it, which checks that the entry is durable
    /// when `add` returns and returns its position.
    fn batch_log_and_another_writer() -> (
        PlainArc<CommitLog>,
        MemStorage,
        loom::thread::JoinHandle<ReplayPosition>,
    ) {
        let storage = MemStorage::default();
        let log = batch_log(&storage);
        let (l2, s2) = (PlainArc::clone(&log), storage.clone());
        let other = loom::thread::spawn(move || {
            let pos = l2.add(1, &mutation("a", 10)).unwrap();
            assert!(durable(&s2, pos), "returned before its sync");
            pos
        });
        (log, storage, other)
    }

    /// Two writers in batch mode: each returns only once a sync covered its
    /// entry (whether it ran the cycle itself, the other writer did, or the
    /// flusher), the two entries get distinct positions, and at most one
    /// sync per entry runs (fewer when they share one).
    #[test]
    fn loom_batch_writers_return_only_after_a_covering_sync() {
        model(|| {
            let (log, storage, other) = batch_log_and_another_writer();
            let mine = log.add(2, &mutation("b", 10)).unwrap();
            assert!(durable(&storage, mine), "returned before its sync");
            let theirs = other.join().unwrap();
            assert_ne!(mine, theirs);
            let stats = log.stats();
            assert_eq!(stats.synced_entries, 2);
            assert!((1..=2).contains(&stats.syncs), "{stats:?}");
            PlainArc::try_unwrap(log).unwrap().close().unwrap();
        });
    }

    /// A write failure in a cycle (run by either writer or the flusher)
    /// fails both waiting writers and the close; nobody hangs.
    #[test]
    fn loom_a_failed_write_fails_every_waiting_writer() {
        model(|| {
            let storage = MemStorage::default();
            storage.0.lock().fail_writes = true;
            let log = batch_log(&storage);
            let l2 = PlainArc::clone(&log);
            let other = loom::thread::spawn(move || l2.add(1, &mutation("a", 10)));
            let mine = log.add(2, &mutation("b", 10));
            assert!(matches!(mine, Err(Error::Failed(_))), "{mine:?}");
            let theirs = other.join().unwrap();
            assert!(matches!(theirs, Err(Error::Failed(_))), "{theirs:?}");
            assert!(PlainArc::try_unwrap(log).unwrap().close().is_err());
        });
    }

    /// Retirement racing appends across a segment switch: one thread adds
    /// entries of tables 1 and 2 over three segments while another reports
    /// table 1 flushed up to the end of time. Whatever the interleaving,
    /// every entry of table 2 is durable in a segment still on record at
    /// close, and segments only table 1 held may go.
    #[test]
    fn loom_discard_racing_a_segment_switch_keeps_other_tables_entries() {
        model(|| {
            let storage = MemStorage::default();
            let log = batch_log(&storage);
            let l2 = PlainArc::clone(&log);
            let flusher = loom::thread::spawn(move || {
                l2.discard_completed(1, ReplayPosition::new(u64::MAX, u32::MAX));
            });
            // 1,500-byte entries: two per 4 KiB segment.
            let kept: Vec<ReplayPosition> = (0..2)
                .map(|i| {
                    log.add(1, &mutation("one", 1500)).unwrap();
                    log.add(2, &mutation(&format!("two{i}"), 1500)).unwrap()
                })
                .collect();
            flusher.join().unwrap();
            PlainArc::try_unwrap(log).unwrap().close().unwrap();
            for pos in kept {
                assert!(durable(&storage, pos), "table 2's entry at {pos} was lost");
            }
        });
    }

    /// Periodic mode with a buffer budget of one entry: the second writer
    /// waits for the flusher to write the first entry out, then goes on;
    /// close makes both durable.
    #[test]
    fn loom_buffer_budget_blocks_until_the_flusher_writes() {
        model(|| {
            let storage = MemStorage::default();
            let mut c = config(SyncMode::Periodic(Duration::from_secs(3600)));
            c.buffer_budget = Some(2048);
            let log = PlainArc::new(
                CommitLog::with_storage(Box::new(storage.clone()), c, BTreeMap::new(), 0).unwrap(),
            );
            let l2 = PlainArc::clone(&log);
            let other = loom::thread::spawn(move || l2.add(1, &mutation("a", 1200)).unwrap());
            let mine = log.add(2, &mutation("b", 1200)).unwrap();
            let theirs = other.join().unwrap();
            assert_ne!(mine, theirs);
            PlainArc::try_unwrap(log).unwrap().close().unwrap();
            assert!(durable(&storage, mine) && durable(&storage, theirs));
        });
    }

    /// Segment switches racing the reserve thread: a writer takes the
    /// prefilled reserve and renames it to the next id, or creates a sparse
    /// segment itself when none is ready, while the reserve thread makes
    /// the next one. Whatever the interleaving, positions keep growing,
    /// every entry is durable after close, and close leaves no unused
    /// reserve behind. Explored with three preemptions, which finds a
    /// reserve started while a switch still renames the previous one (the
    /// new file takes over the name under the writer).
    #[test]
    fn loom_segment_switches_racing_the_reserve_keep_every_entry() {
        model_with_preemptions(3, || {
            let storage = MemStorage::default();
            let mut c = config(SyncMode::Periodic(Duration::from_secs(3600)));
            c.preallocate = crate::Preallocate::Always;
            c.segment_size = 4096;
            c.total_size_limit = 16 * 4096;
            let log =
                CommitLog::with_storage(Box::new(storage.clone()), c, BTreeMap::new(), 0).unwrap();
            let positions: Vec<ReplayPosition> = (0..3)
                .map(|i| log.add(i, &mutation("k", 1975)).unwrap())
                .collect();
            assert!(
                positions.windows(2).all(|w| w[0].segment < w[1].segment),
                "{positions:?}"
            );
            log.close().unwrap();
            for &p in &positions {
                assert!(durable(&storage, p), "{p:?} lost");
            }
            let files: Vec<u64> = storage.0.lock().files.keys().copied().collect();
            let used: Vec<u64> = positions.iter().map(|p| p.segment).collect();
            assert_eq!(files, used, "an unused reserve was left behind");
        });
    }

    /// A batch of two entries and a single entry, from two threads in
    /// `Batch(0)`: each call returns only once all its entries are durable,
    /// whoever ran the covering cycle, and every position is distinct.
    #[test]
    fn loom_a_batch_and_a_single_add_return_only_when_durable() {
        model(|| {
            let (log, storage, other) = batch_log_and_another_writer();
            let (x, y) = (mutation("b", 10), mutation("c", 10));
            let mine = log.add_batch(&[(2, &x), (3, &y)]).unwrap();
            for &p in &mine {
                assert!(durable(&storage, p), "batch returned before its sync");
            }
            let theirs = other.join().unwrap();
            assert!(!mine.contains(&theirs) && mine[0] < mine[1]);
            assert_eq!(log.stats().synced_entries, 3);
            PlainArc::try_unwrap(log).unwrap().close().unwrap();
        });
    }

    /// A periodic sync racing a writer at the buffer budget: while the
    /// flusher's fdatasync runs with the writing slot free, the writer may
    /// write the buffers out itself. Whatever the interleaving, the sync
    /// caller returns once everything before its call is durable, nobody
    /// hangs, and every entry is durable after close.
    #[test]
    fn loom_a_periodic_sync_does_not_hold_up_writers_at_the_budget() {
        model(|| {
            let storage = MemStorage::default();
            let mut c = config(SyncMode::Periodic(Duration::from_secs(3600)));
            c.buffer_budget = Some(2048);
            let log = PlainArc::new(
                CommitLog::with_storage(Box::new(storage.clone()), c, BTreeMap::new(), 0).unwrap(),
            );
            let first = log.add(1, &mutation("a", 1200)).unwrap();
            let (l2, s2) = (PlainArc::clone(&log), storage.clone());
            let syncer = loom::thread::spawn(move || {
                l2.sync().unwrap();
                assert!(
                    durable(&s2, first),
                    "sync returned before the entry was durable"
                );
            });
            let second = log.add(2, &mutation("b", 1200)).unwrap();
            let third = log.add(3, &mutation("c", 1200)).unwrap();
            syncer.join().unwrap();
            // What the log counts as synced is durable, no more: entries
            // written during the sync are left to the next one.
            let synced = log.shared.state.lock().synced;
            for p in [first, second, third] {
                if p < synced {
                    assert!(durable(&storage, p), "{p:?} counted as synced");
                }
            }
            PlainArc::try_unwrap(log).unwrap().close().unwrap();
            for p in [first, second, third] {
                assert!(durable(&storage, p), "{p:?} lost");
            }
        });
    }
}
