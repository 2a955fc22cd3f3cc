//! Placement: an entry's size check, the buffer budget, finding (or
//! making) a segment with room, the wait at the size limit, and the copy
//! into the pending buffer.

use std::io;
use std::time::{Duration, Instant};

use mutation::Mutation;
use mutation::limits::Checked;

use super::{Chunk, Shared, State};
use crate::config::SyncMode;
use crate::format::{self, FRAMING, KIND_DROP, KIND_MUTATION};
use crate::sync::{Arc, MutexGuard, PlainArc, arc_from_std};
use crate::{Error, ReplayPosition, TableId};

/// A mutation as [`CommitLog::add`](crate::CommitLog::add) and
/// [`CommitLog::add_async`](crate::CommitLog::add_async) take it, with its
/// encoded length: from a plain `&Mutation` the log measures it; from a
/// [`mutation::limits::Checked`] it takes the length the check measured, so
/// a write path that checked the mutation measures it once.
#[derive(Debug, Clone, Copy)]
pub struct MutationRef<'a> {
    mutation: &'a Mutation,
    encoded_len: usize,
}

impl<'a> From<&'a Mutation> for MutationRef<'a> {
    fn from(mutation: &'a Mutation) -> Self {
        MutationRef {
            mutation,
            encoded_len: mutation.encoded_len(),
        }
    }
}

impl<'a> From<Checked<'a>> for MutationRef<'a> {
    fn from(checked: Checked<'a>) -> Self {
        MutationRef {
            mutation: checked.mutation(),
            encoded_len: checked.encoded_len(),
        }
    }
}

/// An entry's payload (kind, table, body) as [`Shared::place`] takes it:
/// framed straight into the log's buffer under the state lock, so a
/// mutation is encoded once, into the buffer, with no copy of its own (a
/// writer waiting for buffer room holds no encoded payload: with 100
/// writers of 128 KiB mutations those copies were 13 MiB of heap, issue
/// 19's memory shape).
#[derive(Debug, Clone, Copy)]
pub(super) enum Payload<'a> {
    /// A drop record: the kind and table alone.
    Drop(TableId),
    /// A mutation of `table`.
    Mutation(TableId, MutationRef<'a>),
}

impl Payload<'_> {
    /// The payload's length in bytes.
    pub(super) fn len(&self) -> usize {
        match self {
            Payload::Drop(_) => format::PAYLOAD_PREFIX,
            Payload::Mutation(_, m) => format::PAYLOAD_PREFIX + m.encoded_len,
        }
    }

    /// The table the entry is of.
    fn table(&self) -> TableId {
        match self {
            Payload::Drop(table) | Payload::Mutation(table, _) => *table,
        }
    }

    fn kind(&self) -> u8 {
        match self {
            Payload::Drop(_) => KIND_DROP,
            Payload::Mutation(..) => KIND_MUTATION,
        }
    }

    /// Appends the payload's bytes to `out`.
    fn write_into(&self, out: &mut Vec<u8>) {
        match self {
            Payload::Drop(table) => {
                out.extend_from_slice(&format::payload_prefix(KIND_DROP, *table));
            }
            Payload::Mutation(table, m) => {
                out.extend_from_slice(&format::payload_prefix(KIND_MUTATION, *table));
                m.mutation.encode_into(out);
            }
        }
    }

    /// Appends the framed entry for segment `id` to `out`.
    fn put(&self, out: &mut Vec<u8>, id: u64) {
        // The lengths agree by construction (`MutationRef` measures the
        // mutation it borrows; `mutation`'s tests hold `encoded_len` to
        // the encoding); `put_entry_with` refuses any disagreement before
        // the entry counts as placed.
        format::put_entry_with(out, id, self.len(), |o| self.write_into(o));
    }
}

/// Where [`Shared::place`] put an entry.
#[derive(Debug, Clone, Copy)]
pub(super) struct Placed {
    pub(super) pos: ReplayPosition,
    /// Just past the entry: durable once `synced` reaches it.
    pub(super) end: ReplayPosition,
    /// The cycle that will write (and in batch mode sync) it.
    pub(super) cycle_no: u64,
    /// Periodic mode: the oldest unsynced entry is over two intervals old.
    pub(super) lagging: bool,
}

impl Shared {
    pub(super) fn check_usable(&self, st: &State) -> Result<(), Error> {
        if let Some(e) = &st.failed {
            return Err(self.failure(e));
        }
        if st.closing {
            return Err(Error::Closed);
        }
        Ok(())
    }

    /// Appends one entry (`payload` = kind, table, body).
    pub(super) fn append(
        &self,
        payload: Payload<'_>,
        wait_sync: bool,
    ) -> Result<ReplayPosition, Error> {
        let (table, kind) = (payload.table(), payload.kind());
        // A batch mutation is acknowledged once synced, a periodic one with
        // `PeriodicAck::Written` once written: either way the writer waits
        // for the cycle that takes it, and in `Batch(0)` and periodic mode
        // runs that cycle itself when none is running, so it need not wake
        // the flusher.
        let periodic_write =
            !wait_sync && kind == KIND_MUTATION && self.config.periodic_acks_written();
        let writer_leads =
            periodic_write || (wait_sync && self.config.sync == SyncMode::Batch(Duration::ZERO));
        let (mut st, placed) = self.place(payload, wait_sync, !writer_leads)?;
        let Placed {
            pos,
            end,
            cycle_no,
            lagging,
        } = placed;
        if (wait_sync && kind == KIND_MUTATION) || (periodic_write && !lagging) {
            return self.wait_cycle(st, cycle_no, end).map(|()| pos);
        }
        if wait_sync {
            self.wait_synced(&mut st, end)?;
        } else if lagging {
            // (A sync covering the entry has written it too.)
            self.hold_for_lagging_sync(&mut st, end)?;
        }
        if kind == KIND_DROP {
            // The side file keeps the drop even if damage later hides the
            // record; written before the table's entries are let go.
            let oldest = st.segments.keys().next().copied().unwrap_or(pos.segment);
            MutexGuard::unlocked(&mut st, || self.record_drop(table, pos, oldest))?;
            // Entries of `table` written after the record (a new table
            // with the same id) stay.
            self.discard(&mut st, table, pos);
        }
        Ok(pos)
    }

    /// Records `table`'s drop at `pos` in the drop side file, durably,
    /// forgetting drops older than the `oldest` segment on disk (every
    /// entry they refuse is gone).
    fn record_drop(&self, table: TableId, pos: ReplayPosition, oldest: u64) -> Result<(), Error> {
        let mut drops = self.drops.lock();
        let e = drops.entry(table).or_insert(pos);
        *e = (*e).max(pos);
        drops.retain(|_, p| p.segment >= oldest);
        let bytes = format::encode_drops(&drops);
        self.storage.write_drops(&bytes).map_err(|e| {
            Error::io(
                self.storage.path(0).with_file_name(format::DROPS_FILE_NAME),
                e,
            )
        })
    }

    /// The oldest unsynced entry is over two intervals old: the disk is not
    /// keeping up. Holds the writer until a sync covers its entry (ending
    /// at `end`), so that what a crash can lose stays about two intervals
    /// of writes (Cassandra's periodic sync lag block) instead of growing
    /// without bound.
    pub(super) fn hold_for_lagging_sync<'a>(
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
    pub(super) fn place<'a>(
        &'a self,
        payload: Payload<'_>,
        wait_sync: bool,
        notify_flusher: bool,
    ) -> Result<(MutexGuard<'a, State>, Placed), Error> {
        let framed = self.check_entry_size(&payload)?;
        let mut st = self.state.lock();
        let switched = self.find_room(&mut st, framed)?;
        let placed = self.copy_entry(&mut st, payload);
        if wait_sync && payload.kind() == KIND_DROP {
            st.sync_requested = true;
        }
        if !st.flusher_busy && notify_flusher {
            self.work.notify_one();
        }
        if switched {
            // A new segment opened: if the log is above half its limit, ask
            // for the flushes that free the oldest segments.
            self.request_flushes(&mut st, 0);
        }
        Ok((st, placed))
    }

    /// The framed size of `payload`, or [`Error::EntryTooLarge`].
    pub(super) fn check_entry_size(&self, payload: &Payload<'_>) -> Result<usize, Error> {
        let limit = self.config.max_payload();
        if payload.len() > limit {
            return Err(Error::EntryTooLarge {
                table: payload.table(),
                size: payload.len(),
                limit,
                segment_size: self.config.segment_size,
                framing: FRAMING,
            });
        }
        Ok(payload.len() + FRAMING)
    }

    /// Waits, as needed, until the unwritten buffers have room for `framed`
    /// bytes and the active segment has room for them, switching to a new
    /// segment (the reserve, or a fresh one) when it is full and waiting at
    /// the size limit for one to be freed. Returns whether this writer
    /// switched segments.
    fn find_room<'a>(
        &'a self,
        st: &mut MutexGuard<'a, State>,
        framed: usize,
    ) -> Result<bool, Error> {
        let mut budget_deadline: Option<Instant> = None;
        let mut limit_wait = LimitWait::default();
        let mut switched = false;
        let mut waits = RoomWaits::default();
        let found = loop {
            if let Err(e) = self.check_usable(st) {
                break Err(e);
            }
            match self.wait_for_buffer_budget(st, framed, &mut budget_deadline, &mut waits) {
                Ok(true) => continue,
                Ok(false) => {}
                Err(e) => break Err(e),
            }
            let room = st.active.is_some_and(|a| {
                st.segments[&a].end as usize + framed <= self.config.segment_size as usize
            });
            if room {
                break Ok(switched);
            }
            if st.rotating {
                // Another writer is switching to the next segment.
                waits.rotation = true;
                waits.start();
                self.progress.wait(st);
                continue;
            }
            match self.switch_segment(st) {
                Ok(true) => {
                    switched = true;
                    continue;
                }
                Ok(false) => {}
                Err(e) => break Err(e),
            }
            waits.limit = true;
            waits.start();
            if let Err(e) = self.wait_at_size_limit(st, &mut limit_wait) {
                break Err(e);
            }
        };
        waits.record(&mut st.stats);
        found
    }

    /// If the unwritten buffers have no room for `framed` more bytes, waits
    /// for the running cycle (or, in periodic mode when no cycle runs,
    /// writes them out itself) and returns `true` so that the caller checks
    /// again; returns `false` at once when there is room. Fails with
    /// [`Error::BufferTimeout`] once `deadline` (set at the first wait) has
    /// passed with no room.
    ///
    /// In periodic mode a writer at the budget never waits for the flusher
    /// thread to come round: the flusher may be in a long fdatasync, deleting
    /// the segments a sync retired, or simply not scheduled yet on a loaded
    /// machine, and every writer would stand still meanwhile (measured under
    /// replica-stress: every writer held at the budget for 0.3-3 s with no
    /// cycle running). Batch mode hands the cycle to the flusher, whose
    /// cycles sync and publish the batches their writers wait on.
    fn wait_for_buffer_budget<'a>(
        &'a self,
        st: &mut MutexGuard<'a, State>,
        framed: usize,
        deadline: &mut Option<Instant>,
        waits: &mut RoomWaits,
    ) -> Result<bool, Error> {
        let full = |st: &State| st.unwritten > 0 && st.unwritten + framed > self.budget;
        if !full(st) {
            return Ok(false);
        }
        waits.budget = true;
        waits.start();
        if !st.flusher_busy && matches!(self.config.sync, SyncMode::Periodic(_)) {
            // No cycle runs: write the buffers out here rather than wait for
            // the flusher (see above).
            self.cycle(st, false, Instant::now());
            return Ok(true);
        }
        if !st.flusher_busy {
            self.work.notify_one();
        }
        let d = *deadline.get_or_insert_with(|| Instant::now() + self.config.write_timeout);
        if self.progress.wait_until(st, d) && full(st) {
            return Err(Error::BufferTimeout {
                budget: self.budget,
                timeout: self.config.write_timeout,
            });
        }
        Ok(true)
    }

    /// Makes a new segment the active one, with the lock released while
    /// the file system works: the zero-filled reserve if one is ready (a
    /// rename, made durable by the next sync's directory sync before any
    /// entry in it is acknowledged), else a fresh sparse segment if the
    /// size limit allows. Returns `false` (nothing done) at the size limit.
    /// The id is used up even if the switch fails, so a half-created file
    /// never blocks a retry.
    fn switch_segment<'a>(&'a self, st: &mut MutexGuard<'a, State>) -> Result<bool, Error> {
        let size = self.config.segment_size;
        if let Some(file) = st.reserve.take() {
            let id = st.next_id;
            st.next_id += 1;
            st.rotating = true;
            let renamed = MutexGuard::unlocked(st, || self.storage.install_reserve(id));
            self.end_switch(st);
            return match renamed {
                Ok(()) => {
                    self.install_segment(st, id, file);
                    Ok(true)
                }
                Err(e) => {
                    self.forget_reserve(st);
                    Err(Error::io(self.storage.path(id), e))
                }
            };
        }
        if st.disk_bytes + u64::from(size) > self.config.total_size_limit {
            return Ok(false);
        }
        let id = st.next_id;
        st.next_id += 1;
        st.rotating = true;
        st.disk_bytes += u64::from(size);
        let created = MutexGuard::unlocked(st, || self.storage.create(id, size));
        self.end_switch(st);
        match created {
            Ok(file) => {
                Self::count_created(st);
                self.install_segment(st, id, arc_from_std(PlainArc::from(file)));
                Ok(true)
            }
            Err(e) => {
                st.disk_bytes -= u64::from(size);
                // An empty leftover replays as nothing; remove it if we can.
                let _ = self.storage.remove(id);
                if e.kind() == io::ErrorKind::StorageFull {
                    return Err(Error::failure(self.dir(), &PlainArc::new(e)));
                }
                Err(Error::io(self.storage.path(id), e))
            }
        }
    }

    /// A segment switch ended (either way): wakes writers waiting for it
    /// and the reserve thread, which waits for switches to end.
    fn end_switch(&self, st: &mut State) {
        st.rotating = false;
        self.progress.notify_all();
        self.reserver.notify_one();
    }

    /// At the size limit: makes closed segments retirable (asks for a
    /// sync), asks the owner to flush (again every
    /// [`crate::Config::flush_request_interval`]) and waits for a segment
    /// to go. Fails with [`Error::LogFull`] once the writer's timeout has
    /// passed.
    fn wait_at_size_limit<'a>(
        &'a self,
        st: &mut MutexGuard<'a, State>,
        wait: &mut LimitWait,
    ) -> Result<(), Error> {
        st.sync_requested = true;
        self.work.notify_one();
        let now = Instant::now();
        let d = *wait.deadline.get_or_insert(now + self.config.write_timeout);
        if now >= d {
            return Err(Error::LogFull {
                disk_bytes: st.disk_bytes,
                limit: self.config.total_size_limit,
                timeout: self.config.write_timeout,
            });
        }
        if wait.next_request.is_none_or(|t| now >= t) {
            wait.next_request = Some(now + self.config.flush_request_interval);
            if self.request_flushes(st, u64::from(self.config.segment_size)) {
                // The handler ran with the lock released: look again.
                return Ok(());
            }
        }
        let wake = wait.next_request.map_or(d, |t| t.min(d));
        self.progress.wait_until(st, wake);
        Ok(())
    }

    /// Reserves the entry's place at the end of the active segment (which
    /// has room), frames it into the pending buffer (a mutation encoded
    /// there) and records what it pins.
    fn copy_entry(&self, st: &mut State, payload: Payload<'_>) -> Placed {
        let framed = payload.len() + FRAMING;
        let id = st.active.expect("a segment with room was found");
        let seg = &st.segments[&id];
        let offset = seg.end;
        // Fixed-capacity chunks: an entry joins the last chunk only if it
        // fits without the buffer growing, so no chunk is ever reallocated.
        // The entry is framed before anything counts it as placed.
        let fits = |c: &Chunk| c.segment == id && c.bytes.len() + framed <= c.bytes.capacity();
        match st.pending.last_mut() {
            Some(c) if fits(c) => payload.put(&mut c.bytes, id),
            _ => {
                let file = Arc::clone(seg.file.as_ref().expect("the active segment is open"));
                let mut bytes = take_chunk_buffer(&mut st.pool, framed);
                payload.put(&mut bytes, id);
                st.pending.push(Chunk {
                    segment: id,
                    file,
                    offset,
                    bytes,
                });
            }
        }
        let seg = st
            .segments
            .get_mut(&id)
            .expect("the active segment is on record");
        seg.end += framed as u32;
        match payload {
            Payload::Mutation(table, _) => {
                let e = seg.dirty.entry(table).or_default();
                e.entries += 1;
                e.newest = e.newest.max(offset);
            }
            // The table's entries are released only once the drop record
            // is durable (see `append`): retiring a segment earlier could
            // leave a crash with part of the dropped table's data and no
            // drop.
            Payload::Drop(_) => seg.has_drop = true,
        }
        st.unwritten += framed;
        st.pending_entries += 1;
        st.stats.entries += 1;
        st.stats.bytes += framed as u64;
        // Periodic mode bounds how long an entry may stay unsynced (see
        // `hold_for_lagging_sync`); batch mode waits for every sync anyway
        // and reads no clock here.
        let lagging = match self.config.sync {
            SyncMode::Periodic(interval) => {
                let now = Instant::now();
                let oldest = *st.unsynced_since.get_or_insert(now);
                now.saturating_duration_since(oldest) > interval.saturating_mul(2)
            }
            SyncMode::Batch(_) => false,
        };
        Placed {
            pos: ReplayPosition::new(id, offset),
            end: ReplayPosition::new(id, offset + framed as u32),
            // The next cycle to start takes this entry with the rest of
            // `pending`.
            cycle_no: st.next_cycle,
            lagging,
        }
    }
}

/// Which waits one append met while finding room, and since when.
#[derive(Debug, Default)]
struct RoomWaits {
    budget: bool,
    rotation: bool,
    limit: bool,
    since: Option<Instant>,
}

impl RoomWaits {
    /// Notes that a wait starts (the first one's start is the append's).
    fn start(&mut self) {
        self.since.get_or_insert_with(Instant::now);
    }

    /// Adds the append's waits to the log's counters.
    fn record(self, stats: &mut crate::LogStats) {
        let Some(since) = self.since else {
            return;
        };
        stats.budget_waits += u64::from(self.budget);
        stats.rotation_waits += u64::from(self.rotation);
        stats.size_limit_waits += u64::from(self.limit);
        stats.room_wait_micros += u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX);
    }
}

/// A writer's wait at the size limit.
#[derive(Debug, Default)]
struct LimitWait {
    /// When the writer gives up ([`Error::LogFull`]).
    deadline: Option<Instant>,
    /// When flushes are next requested.
    next_request: Option<Instant>,
}

/// The capacity of the commit log's write buffers (chunks). Entries are
/// copied into fixed-capacity chunks that are never grown: a buffer that
/// doubled as writers appended (up to the buffer budget, 17 MiB by
/// default) was reallocated on whichever writer thread filled it and freed
/// on the flusher, which left glibc's per-thread arenas holding
/// 100-190 MiB of freed memory under 100 writers (issue 19). With fixed
/// chunks, pooled for reuse, the log's buffers stay at the budget.
pub(super) const CHUNK_CAPACITY: usize = 1 << 20;

/// A cleared buffer for a new chunk that will hold at least `needed`
/// bytes: one from the pool, or a new one of [`CHUNK_CAPACITY`] (larger
/// only for an entry that does not fit one).
pub(super) fn take_chunk_buffer(pool: &mut Vec<Vec<u8>>, needed: usize) -> Vec<u8> {
    if needed <= CHUNK_CAPACITY
        && let Some(mut bytes) = pool.pop()
    {
        bytes.clear();
        return bytes;
    }
    Vec::with_capacity(CHUNK_CAPACITY.max(needed))
}
