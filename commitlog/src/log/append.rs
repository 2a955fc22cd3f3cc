//! Placement: framing an entry, the buffer budget, finding (or making) a segment with room, the size limit, copying into the pending buffer.

use std::time::{Duration, Instant};

use mutation::Mutation;

use super::{Chunk, Shared, State};
use crate::config::SyncMode;
use crate::format::{self, FRAMING, KIND_DROP, KIND_MUTATION};
use crate::sync::{MutexGuard, PlainArc};
use crate::{Error, ReplayPosition, TableId};

/// The payload of `table`'s entry for `mutation`: kind, table, encoding.
pub(super) fn mutation_payload(table: TableId, mutation: &Mutation) -> Vec<u8> {
    let mut payload = Vec::with_capacity(format::PAYLOAD_PREFIX + mutation.encoded_len());
    payload.extend_from_slice(&format::payload_prefix(KIND_MUTATION, table));
    mutation.encode_into(&mut payload);
    payload
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
    pub(super) fn check_usable(st: &State) -> Result<(), Error> {
        if let Some(e) = &st.failed {
            return Err(Error::Failed(PlainArc::clone(e)));
        }
        if st.closing {
            return Err(Error::Closed);
        }
        Ok(())
    }

    /// Appends one entry (`payload` = kind, table, body).
    pub(super) fn append(
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
}
