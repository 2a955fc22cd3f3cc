//! Segments: installing a new active segment, the reserve thread,
//! discarding flushed entries and retiring segments no table needs.

use std::collections::HashMap;

use super::{Chunk, Segment, Shared, State};
use crate::format::{self, HEADER_LEN};
use crate::storage::SegmentFile;
use crate::sync::{Arc, MutexGuard, PlainArc, arc_from_std};
use crate::{ReplayPosition, ReplayPositionSet, TableId};

impl Shared {
    /// Forgets `table`'s entries up to `up_to` and retires what that frees.
    pub(super) fn discard<'a>(
        &'a self,
        st: &mut MutexGuard<'a, State>,
        table: TableId,
        up_to: ReplayPosition,
    ) {
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
    pub(super) fn discard_set<'a>(
        &'a self,
        st: &mut MutexGuard<'a, State>,
        table: TableId,
        set: &ReplayPositionSet,
    ) {
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

    /// Makes the new segment `id` (already counted in `disk_bytes`) the
    /// active one and closes the previous one.
    pub(super) fn install_segment(&self, st: &mut State, id: u64, file: Arc<dyn SegmentFile>) {
        let size = self.config.segment_size;
        if let Some(old) = st.active.replace(id)
            && let Some(seg) = st.segments.get_mut(&old)
        {
            seg.closed = true;
        }
        let mut bytes = super::append::take_chunk_buffer(&mut st.pool, HEADER_LEN);
        bytes.extend_from_slice(&format::header(id, size));
        st.pending.push(Chunk {
            segment: id,
            file: Arc::clone(&file),
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
                retiring: false,
                disk_size: u64::from(size),
            },
        );
        st.dir_dirty = true;
        st.stats.bytes += HEADER_LEN as u64;
    }

    /// Counts a segment file just created (already in `disk_bytes`).
    pub(super) fn count_created(st: &mut State) {
        st.stats.segments_created += 1;
        st.stats.segments_on_disk += 1;
        st.stats.disk_bytes = st.disk_bytes;
    }

    /// Removes the unused reserve segment (already taken out of
    /// `reserve`). If the file cannot be removed it is still forgotten
    /// here; the next open removes it.
    pub(super) fn forget_reserve(&self, st: &mut State) {
        let _ = self.storage.remove_reserve();
        st.disk_bytes -= u64::from(self.config.segment_size);
        st.stats.segments_on_disk -= 1;
        st.stats.segments_retired += 1;
        st.stats.disk_bytes = st.disk_bytes;
    }

    /// The reserve thread: once the log is in use, keeps one zero-filled
    /// segment ready for the next switch, within the size limit.
    pub(super) fn reserve_main(&self) {
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
                    st.reserve = Some(arc_from_std(PlainArc::from(file)));
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

    /// Deletes (or sets aside, if damaged) every segment that is closed,
    /// fully synced and needed by no table; a segment holding a drop record
    /// goes only once no older segment is left.
    ///
    /// The file system work (closing, removing, the directory sync) runs
    /// with the state lock released, so writers are not held up by it: the
    /// segments are marked `retiring` (and their files taken) under the
    /// lock (a concurrent retirement leaves them alone and counts them as
    /// still there, so a drop record behind them waits), removed and the
    /// directory synced unlocked, and the result recorded once the lock is
    /// back. A removal that fails leaves its segment, and those after it in
    /// the round, on record for a later retirement. A round that removed
    /// everything it took looks again: a drop record held back by it may go
    /// now.
    pub(super) fn retire<'a>(&'a self, st: &mut MutexGuard<'a, State>) {
        loop {
            let gone = Self::retirable(st);
            if gone.is_empty() {
                return;
            }
            // The files are closed with the lock released too: closing a
            // segment's last descriptor after its removal frees its blocks,
            // which took ext4 about 20 ms a segment, and a sync that let go
            // of dozens held every writer for up to a second (measured under
            // replica-stress's default load). Closed first, the removal
            // frees them instead, also unlocked. A segment whose removal
            // fails stays on record without a file, as a replayed one: it
            // is closed and synced, so nothing writes to it again.
            let mut files = Vec::with_capacity(gone.len());
            for (id, _) in &gone {
                if let Some(seg) = st.segments.get_mut(id) {
                    seg.retiring = true;
                    files.extend(seg.file.take());
                }
            }
            let removed = MutexGuard::unlocked(st, || {
                drop(files);
                self.remove_segments(&gone)
            });
            for (i, (id, _)) in gone.iter().enumerate() {
                if i < removed {
                    if let Some(seg) = st.segments.remove(id) {
                        st.disk_bytes -= seg.disk_size;
                    }
                    st.stats.segments_retired += 1;
                } else if let Some(seg) = st.segments.get_mut(id) {
                    // Retried at the next retirement; a segment that cannot
                    // be removed only costs disk space.
                    seg.retiring = false;
                }
            }
            if removed > 0 {
                st.stats.segments_on_disk =
                    st.segments.len() as u64 + u64::from(st.reserve.is_some());
                st.stats.disk_bytes = st.disk_bytes;
                self.progress.notify_all();
                self.reserver.notify_one();
            }
            if removed < gone.len() {
                return;
            }
        }
    }

    /// The segments a retirement may take now, oldest first, with whether
    /// each is damaged (set aside rather than deleted).
    fn retirable(st: &State) -> Vec<(u64, bool)> {
        let mut older_kept = false;
        let mut gone = Vec::new();
        for (&id, seg) in &st.segments {
            let free =
                !seg.retiring && seg.closed && seg.dirty.is_empty() && seg.synced_end >= seg.end;
            if free && !(seg.has_drop && older_kept) {
                gone.push((id, seg.damaged));
            } else {
                // Kept, or being removed by another retirement that may yet
                // fail: a drop record behind it must stay.
                older_kept = true;
            }
        }
        gone
    }

    /// Removes (or sets aside) `segments` in order, stopping at the first
    /// failure (a drop record behind a segment that stays must stay too),
    /// then makes the removals durable; returns how many went. Runs without
    /// the state lock.
    fn remove_segments(&self, segments: &[(u64, bool)]) -> usize {
        let mut removed = 0;
        for &(id, damaged) in segments {
            let result = if damaged {
                self.storage.quarantine(id)
            } else {
                self.storage.remove(id)
            };
            if result.is_err() {
                break;
            }
            removed += 1;
        }
        if removed > 0 {
            // Make the removals durable before anything relies on them (a
            // removed segment coming back could replay a dropped table).
            let _ = self.storage.sync_dir();
        }
        removed
    }
}
