//! The write-and-sync cycle: the flusher thread, batch waits, periodic
//! syncs and publishing what is durable.

use std::io;
use std::time::{Duration, Instant};

use super::{GenSlot, Shared, State};
use crate::config::SyncMode;
use crate::sync::{Arc, MutexGuard, PlainArc};
use crate::{Error, ReplayPosition};

impl Shared {
    /// Waits until `end` is durable. In `Batch(0)` the waiter runs the
    /// write-and-sync cycle itself when none is running.
    pub(super) fn wait_synced<'a>(
        &'a self,
        st: &mut MutexGuard<'a, State>,
        end: ReplayPosition,
    ) -> Result<(), Error> {
        let lead = self.config.sync == SyncMode::Batch(Duration::ZERO);
        while st.synced < end {
            if let Some(e) = &st.failed {
                return Err(self.failure(e));
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

    /// Waits until cycle `cycle_no`, which covers the entry ending at `end`,
    /// has done what the mode acknowledges: in batch mode synced the entry,
    /// in periodic mode (called only with `PeriodicAck::Written`) written it
    /// to its segment file (handed it to the OS, so that a process crash
    /// cannot lose it). In `Batch(0)` and in periodic mode the writer runs that cycle itself when none is running
    /// (group commit without a handoff: the cycle takes everything pending,
    /// this entry and those of every writer queued behind); otherwise it
    /// waits, without the state lock, on the slot of `cycle_no`'s parity,
    /// which only that cycle's end (or a failure) wakes.
    pub(super) fn wait_cycle<'a>(
        &'a self,
        mut st: MutexGuard<'a, State>,
        cycle_no: u64,
        end: ReplayPosition,
    ) -> Result<(), Error> {
        let periodic = matches!(self.config.sync, SyncMode::Periodic(_));
        let lead = periodic || self.config.sync == SyncMode::Batch(Duration::ZERO);
        let reached = |st: &State| {
            if periodic {
                st.written >= end
            } else {
                st.synced >= end
            }
        };
        if lead && !st.flusher_busy && st.failed.is_none() && !reached(&st) {
            // A periodic cycle only writes: the flusher syncs on its clock.
            self.cycle(&mut st, !periodic, Instant::now());
        }
        if reached(&st) {
            return Ok(());
        }
        if let Some(e) = &st.failed {
            return Err(self.failure(e));
        }
        drop(st);
        let slot = &self.done[(cycle_no % 2) as usize];
        let mut s = slot.state.lock();
        loop {
            if s.done >= cycle_no {
                return Ok(());
            }
            if let Some(e) = &s.failed {
                return Err(self.failure(e));
            }
            slot.cv.wait(&mut s);
        }
    }

    /// Publishes the end of cycle `cycle_no` (in batch mode durable, in
    /// periodic mode written; or the log failed) to the writers waiting in
    /// [`Shared::wait_cycle`].
    pub(super) fn publish(&self, cycle_no: u64, failed: Option<&PlainArc<io::Error>>) {
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
            // The tasks of `Durable` futures, woken after the cycle's sync
            // and under the slot's lock, so that a future dropped (its
            // waker taken out under this lock) is never woken after. Only
            // this cycle's futures (or, on failure, every one) are here.
            s.wakers.wake_all();
            drop(s);
            slot.cv.notify_all();
        }
    }

    /// The flusher thread: writes pending buffers and syncs per the mode.
    /// In `Batch(0)` writers run the cycles themselves (see
    /// [`Shared::wait_synced`]); the flusher then only serves buffer-budget
    /// waits, explicit sync requests and the final sync at close.
    pub(super) fn flusher_main(&self) {
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
    pub(super) fn cycle<'a>(
        &'a self,
        st: &mut MutexGuard<'a, State>,
        sync_now: bool,
        now: Instant,
    ) {
        debug_assert!(!st.flusher_busy, "one cycle at a time");
        if sync_now && matches!(self.config.sync, SyncMode::Periodic(_)) {
            // Write, then sync without holding up writes (see
            // `sync_phase`). The write-only cycle returns with the lock
            // held throughout, so no other cycle starts in between. The
            // request is taken before the write: one made while the write
            // runs (its entry maybe not in it) stays for the next sync.
            st.sync_requested = false;
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
        let mut writeback_from = st.writeback_from;
        // Batch mode fdatasyncs every cycle: write-back between those syncs
        // would only add system calls (and, measured, cost up to a fifth of
        // the throughput at 64 writers). Periodic mode is what it is for.
        let per_sync = match self.config.sync {
            SyncMode::Periodic(_) => self.config.bytes_per_sync,
            SyncMode::Batch(_) => 0,
        };
        st.flusher_busy = true;
        let result = MutexGuard::unlocked(st, || {
            for c in &chunks {
                c.file.write_at(u64::from(c.offset), &c.bytes)?;
                unsynced.insert(c.segment, Arc::clone(&c.file));
                written = ReplayPosition::new(c.segment, c.offset + c.bytes.len() as u32);
                if per_sync > 0 {
                    // Every `per_sync` bytes written to a segment, start
                    // their write-back (a new segment counts from its
                    // first chunk).
                    if writeback_from.segment != c.segment {
                        writeback_from = ReplayPosition::new(c.segment, c.offset);
                    }
                    let from = u64::from(writeback_from.offset);
                    let end = u64::from(written.offset);
                    if end - from >= per_sync {
                        c.file.start_writeback(from, end - from)?;
                        writeback_from = written;
                    }
                }
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
        st.writeback_from = writeback_from;
        // Chunks of the standard capacity go back to the pool, as many as
        // the buffer budget can fill (plus one for a new segment's header);
        // an outsized one (a large entry) is freed.
        let keep = self.budget / super::append::CHUNK_CAPACITY + 2;
        for mut c in chunks {
            if st.pool.len() < keep
                && (super::append::CHUNK_CAPACITY..2 * super::append::CHUNK_CAPACITY)
                    .contains(&c.bytes.capacity())
            {
                c.bytes.clear();
                st.pool.push(std::mem::take(&mut c.bytes));
            }
        }
        match result {
            Err(e) => {
                let e = PlainArc::new(e);
                self.publish(cycle_no, Some(&e));
                st.failed = Some(e);
                st.lag_wakers.wake_all();
            }
            Ok(()) if sync_now => {
                let entries = std::mem::take(&mut st.unsynced_entries);
                self.note_synced(st, written, entries, now);
                self.publish(cycle_no, None);
                // The cycle's handles go before the retirement, which closes
                // the retired segments' files outside the lock: none of them
                // may be left here to close, under it, at the end.
                drop(unsynced);
                self.retire(st);
            }
            Ok(()) => {
                st.unsynced = unsynced;
                if self.config.periodic_acks_written() {
                    // Periodic writers are acknowledged once their entries
                    // are written: this cycle's are.
                    self.publish(cycle_no, None);
                }
            }
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
    pub(super) fn sync_phase<'a>(&'a self, st: &mut MutexGuard<'a, State>, now: Instant) {
        debug_assert!(!st.syncing, "one sync at a time");
        st.syncing = true;
        // Entries appended during the sync are written out by the writer
        // thread, every write interval.
        self.writer.notify_one();
        st.last_sync_start = Some(now);
        let target = st.written;
        st.sync_target = target;
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
            Err(e) => {
                st.failed = Some(PlainArc::new(e));
                st.lag_wakers.wake_all();
            }
            Ok(()) => {
                self.note_synced(st, target, entries, now);
                // As in `cycle`: no handle of a retired file left to close
                // under the lock.
                drop(files);
                self.retire(st);
            }
        }
        self.progress.notify_all();
        self.work.notify_one();
    }

    /// Records that a sync started at `now` made everything up to `upto`
    /// (`entries` entries) durable.
    pub(super) fn note_synced(
        &self,
        st: &mut State,
        upto: ReplayPosition,
        entries: u64,
        now: Instant,
    ) {
        st.synced = st.synced.max(upto);
        st.stats.syncs += 1;
        st.stats.synced_entries += entries;
        // Anything appended or written after the sync started is not
        // covered, and no older than its start.
        let behind = !st.pending.is_empty() || !st.unsynced.is_empty();
        st.unsynced_since = behind.then_some(now);
        if !behind && !st.flusher_busy {
            // Every entry placed so far is durable (none pending, none
            // written since the sync started, no write running): a request
            // made meanwhile, always for placed entries, is served.
            st.sync_requested = false;
        }
        let upto = st.synced;
        // Periodic-mode futures held for a lagging sync that this one
        // covered.
        st.lag_wakers.wake_where(|&end| end <= upto);
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

    /// The periodic writer thread: while a periodic fdatasync runs (the
    /// flusher blocked in it), writes the pending buffers out every
    /// [`crate::Config::write_interval`], so an appended entry reaches the
    /// OS within about one interval even then, and a process crash loses
    /// only what was appended in the last interval. Outside syncs the
    /// flusher writes buffers out as soon as entries arrive.
    pub(super) fn writer_main(&self) {
        let interval = self.config.write_interval;
        let mut st = self.state.lock();
        loop {
            if st.closing || st.failed.is_some() {
                return;
            }
            if !st.syncing {
                self.writer.wait(&mut st);
                continue;
            }
            if !st.pending.is_empty() && !st.flusher_busy {
                self.cycle(&mut st, false, Instant::now());
            }
            let next = Instant::now() + interval;
            self.writer.wait_until(&mut st, next);
        }
    }
}
