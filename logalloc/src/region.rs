//! Regions: bump allocation into segments, free, compaction, reclaim,
//! eviction and merge.
//!
//! # Segment layout
//!
//! Segments hold nothing but object bytes, each object at the next offset
//! that satisfies its alignment (at least one byte each, so every object has
//! a distinct place). Where an object is, its size, alignment and
//! generation live in its handle-table entry.
//!
//! Each segment also has a *slot list*: the handle-table slots of the
//! objects appended to it, in order. Compaction walks that list rather than
//! the segment: a slot whose entry is live and points into the segment is a
//! live object to move; anything else (a freed object, or a slot that was
//! freed and reused elsewhere) is skipped. Because the slots are known up
//! front, compaction can prefetch their scattered table entries, and `free`
//! never touches segment memory. The list costs 4 bytes per object appended,
//! counted with the handle table; it is dropped when the segment is emptied.
//!
//! # Locking
//!
//! A region's state sits behind a reader-writer lock shared with the pool's
//! registry. The owner's `&mut self` operations take it exclusively; `get`
//! takes it shared and the returned guard keeps it so for as long as the
//! bytes are borrowed. Reclaim on behalf of another region only ever uses
//! `try_write`, so it skips a region that is borrowed or busy and can never
//! deadlock with its owner. See the crate documentation for the argument.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::time::{Duration, Instant};

use crate::histogram::{Histogram, Slot};
use crate::managed::{ManagedBytes, ManagedRef};
use crate::pool::{Purpose, SegmentPool};
use crate::stats::RegionStats;
use crate::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use crate::table::{HandleTable, Location};
use crate::{Error, Handle, RegionId, RegionListener};

const NOT_MAPPED: u32 = u32::MAX;

/// Bytes of segment an object of `size` bytes takes: its size, but at least
/// one byte so that every object has its own place.
#[inline]
fn record_len(size: u32) -> u32 {
    size.max(1)
}

/// Rounds of forced compaction in a row that may leave no more room before
/// an allocation gives up (see `find_room_slow`).
const FORCED_STALLS: u32 = 3;

/// What a round of forced compaction did (see `forced_reclaim_step`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Forced {
    /// Compacted segments of the allocating region.
    Own,
    /// Compacted a segment of another region.
    Other,
    /// Found nothing to compact.
    Nothing,
}

/// What an eviction callback reports to reclaim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eviction {
    /// Some objects were freed; reclaim may call again.
    Evicted,
    /// Nothing is left to evict; reclaim will not call again this round.
    Nothing,
}

type EvictionFn = Box<dyn FnMut(&mut Evictor<'_>) -> Eviction + Send + Sync>;

/// The access an eviction callback has to its region while reclaim runs.
///
/// The region is locked for the duration of the callback (possibly by
/// another thread's reclaim), so the callback frees objects through this
/// value instead of through the [`Region`].
///
/// Bytes read with [`get`](Self::get) borrow the `Evictor`, so they cannot
/// be held across a [`free`](Self::free):
///
/// ```compile_fail
/// # use logalloc::{Eviction, PoolConfig, Region, SegmentPool};
/// # let pool = SegmentPool::new(PoolConfig::default().with_memory_limit(4 << 20)).unwrap();
/// let mut region = Region::new(&pool);
/// let h = region.alloc_bytes(b"x").unwrap();
/// region.set_eviction_fn(move |evictor| {
///     let bytes = evictor.get(h).unwrap();
///     evictor.free(h).unwrap(); // error: `evictor` is borrowed by `bytes`
///     assert_eq!(bytes, b"x");
///     Eviction::Evicted
/// });
/// ```
pub struct Evictor<'a> {
    inner: &'a mut RegionInner,
    pool: &'a SegmentPool,
}

impl fmt::Debug for Evictor<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Evictor")
            .field("region", &self.inner.id)
            .finish()
    }
}

impl Evictor<'_> {
    /// The region being evicted from.
    pub fn region_id(&self) -> RegionId {
        self.inner.id
    }

    /// Frees an object of the region, as [`Region::free`] does.
    pub fn free(&mut self, handle: Handle) -> Result<(), Error> {
        self.inner.free(self.pool, handle).map(|_| ())
    }

    /// The bytes of an object of the region, as [`Region::get`] does.
    pub fn get(&self, handle: Handle) -> Result<&[u8], Error> {
        let at = self.inner.table.lookup(handle)?;
        // SAFETY: the region is exclusively locked for the callback's whole
        // run and `&self` prevents `free` while the slice lives; `at` is a
        // live entry, so its bytes are in a segment this region owns, with
        // `offset + size <= segment size` (only `place` and compaction write
        // entries, and both check the segment's end).
        Ok(unsafe {
            self.pool
                .memory()
                .bytes(at.segment, at.offset as usize, at.size as usize)
        })
    }

    /// The region's current statistics.
    pub fn stats(&self) -> RegionStats {
        self.inner.stats()
    }
}

/// Per-segment bookkeeping of the owning region.
#[derive(Debug, Clone)]
struct SegmentInfo {
    index: u32,
    /// Bytes of live objects (at least one per object).
    used: u32,
    /// End of the last object (the bump pointer of the active segment).
    end: u32,
    /// Position in the histogram while the segment is closed.
    slot: Option<Slot>,
    /// While closed: `Histogram::used_floor` of `slot`, so `free` can tell
    /// with one comparison that the segment stays in its bucket.
    stay_above: u32,
    /// Slots of the objects appended to this segment, in order; some may
    /// since have been freed or moved.
    slots: Vec<u32>,
}

/// The region state shared with the pool's registry.
#[derive(Debug)]
pub(crate) struct RegionShared {
    pub(crate) id: RegionId,
    pub(crate) inner: RwLock<RegionInner>,
}

/// Everything a region knows, behind its lock.
pub(crate) struct RegionInner {
    id: RegionId,
    /// Dropped or merged into another region: owns nothing any more.
    dead: bool,
    segment_size: usize,
    /// Compact a closed segment only with at least this percentage free.
    min_free_percent: usize,
    table: HandleTable,
    /// Pool segment index to position in `segments` (or `NOT_MAPPED`).
    segment_map: Vec<u32>,
    segments: Vec<SegmentInfo>,
    active: Option<u32>,
    histogram: Histogram,
    /// Free bytes of all closed segments.
    closed_free: usize,
    used: usize,
    object_bytes: usize,
    bytes_compacted: u64,
    segments_compacted: u64,
    forced_compactions: u64,
    bytes_evicted: u64,
    allocation_failures: u64,
    /// Heap bytes of the segments' slot lists (their capacities), kept up
    /// to date wherever a list is created, grown, shrunk or dropped.
    slot_bytes: usize,
    /// The table and slot-list bytes included in what the listener was
    /// told (0 without a listener); `sync_overhead` brings it up to date.
    overhead_reported: usize,
    /// Time this region's allocations spent reclaiming (pool dry).
    reclaim_time: Duration,
    reclaim_counter: u64,
    listener: Option<Arc<dyn RegionListener>>,
    evictor: Option<EvictionFn>,
    grounded: bool,
}

impl fmt::Debug for RegionInner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegionInner")
            .field("id", &self.id)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl RegionInner {
    fn new(id: RegionId, pool: &SegmentPool) -> RegionInner {
        let geometry = pool.geometry();
        RegionInner {
            id,
            dead: false,
            segment_size: geometry.segment_size,
            min_free_percent: geometry.compaction_min_free_percent,
            table: HandleTable::new(geometry),
            segment_map: Vec::new(),
            segments: Vec::new(),
            active: None,
            histogram: Histogram::new(geometry.segment_shift),
            closed_free: 0,
            used: 0,
            object_bytes: 0,
            bytes_compacted: 0,
            segments_compacted: 0,
            forced_compactions: 0,
            bytes_evicted: 0,
            allocation_failures: 0,
            slot_bytes: 0,
            overhead_reported: 0,
            reclaim_time: Duration::ZERO,
            reclaim_counter: 0,
            listener: None,
            evictor: None,
            grounded: false,
        }
    }

    fn total(&self) -> usize {
        self.segments.len() * self.segment_size
    }

    #[inline]
    fn info(&self, segment: u32) -> &SegmentInfo {
        &self.segments[self.segment_map[segment as usize] as usize]
    }

    #[inline]
    fn info_mut(&mut self, segment: u32) -> &mut SegmentInfo {
        &mut self.segments[self.segment_map[segment as usize] as usize]
    }

    pub(crate) fn segment_indices(&self) -> impl Iterator<Item = u32> + '_ {
        self.segments.iter().map(|info| info.index)
    }

    /// Makes `segment` (just taken from the pool) the active segment.
    fn open(&mut self, segment: u32) {
        debug_assert!(self.active.is_none());
        let index = segment as usize;
        if self.segment_map.len() <= index {
            self.segment_map.resize(index + 1, NOT_MAPPED);
        }
        self.segment_map[index] = self.segments.len() as u32;
        self.segments.push(SegmentInfo {
            index: segment,
            used: 0,
            end: 0,
            slot: None,
            stay_above: u32::MAX,
            slots: Vec::new(),
        });
        self.active = Some(segment);
        if let Some(listener) = &self.listener {
            listener.increase_usage(self.id, self.segment_size);
        }
    }

    /// Gives an empty segment (active or being compacted, not in the
    /// histogram) back to the pool.
    fn release(&mut self, pool: &SegmentPool, segment: u32) {
        let position = self.segment_map[segment as usize] as usize;
        debug_assert_eq!(self.segments[position].used, 0);
        debug_assert!(self.segments[position].slot.is_none());
        self.segment_map[segment as usize] = NOT_MAPPED;
        let info = self.segments.swap_remove(position);
        self.slot_bytes -= info.slots.capacity() * size_of::<u32>();
        if let Some(moved) = self.segments.get(position) {
            self.segment_map[moved.index as usize] = position as u32;
        }
        if self.active == Some(segment) {
            self.active = None;
        }
        pool.release(segment);
        if let Some(listener) = &self.listener {
            listener.decrease_usage(self.id, self.segment_size);
        }
        self.sync_overhead();
    }

    /// Bytes of the handle table and the slot lists: the part of the
    /// footprint outside the segments.
    #[inline]
    fn overhead(&self) -> usize {
        self.table.bytes() + self.slot_bytes
    }

    /// Tells the listener (if any) how the table and slot lists grew or
    /// shrank since it last heard, so that its total stays equal to the
    /// footprint: segments plus table plus slot lists. Called after every
    /// step that can change them; it costs a comparison when nothing did.
    #[inline]
    fn sync_overhead(&mut self) {
        let Some(listener) = &self.listener else {
            return;
        };
        let now = self.overhead();
        let reported = self.overhead_reported;
        if now > reported {
            listener.increase_usage(self.id, now - reported);
        } else if now < reported {
            listener.decrease_usage(self.id, reported - now);
        }
        self.overhead_reported = now;
    }

    fn histogram_insert(&mut self, segment: u32) {
        let free = self.segment_size - self.info(segment).used as usize;
        let slot = self.histogram.insert(segment, free);
        let stay_above = self.histogram.used_floor(slot);
        let info = self.info_mut(segment);
        info.slot = Some(slot);
        info.stay_above = stay_above;
        self.closed_free += free;
    }

    fn histogram_remove(&mut self, segment: u32) {
        let segment_size = self.segment_size;
        let info = self.info_mut(segment);
        let slot = info
            .slot
            .take()
            .expect("closed segment is in the histogram");
        let free = segment_size - info.used as usize;
        self.closed_free -= free;
        if let Some(moved) = self.histogram.remove(slot) {
            self.info_mut(moved).slot = Some(slot);
        }
    }

    /// Moves the active segment to the histogram, or back to the pool if empty.
    fn close_active(&mut self, pool: &SegmentPool) {
        if let Some(segment) = self.active.take() {
            if self.info(segment).used == 0 {
                self.active = Some(segment);
                self.release(pool, segment);
            } else {
                // The list is complete: drop the spare capacity of its growth.
                let slots = &mut self.info_mut(segment).slots;
                let before = slots.capacity();
                slots.shrink_to_fit();
                let after = slots.capacity();
                self.slot_bytes =
                    self.slot_bytes - before * size_of::<u32>() + after * size_of::<u32>();
                self.histogram_insert(segment);
                self.sync_overhead();
            }
        }
    }

    /// Reserves room for an object in the active segment (after any
    /// alignment padding), and counts its record as used. Returns the
    /// location and the segment's position in `segments`; `None` if it does
    /// not fit (nothing changed).
    #[inline]
    fn place(&mut self, size: u32, align: u32) -> Option<(Location, usize)> {
        let segment = self.active?;
        let segment_size = self.segment_size as u32;
        let position = self.segment_map[segment as usize] as usize;
        let info = &mut self.segments[position];
        let offset = (info.end + align - 1) & !(align - 1);
        let record = record_len(size);
        if offset + record > segment_size {
            return None;
        }
        info.end = offset + record;
        info.used += record;
        self.used += record as usize;
        Some((
            Location {
                segment,
                offset,
                size,
                align,
            },
            position,
        ))
    }

    /// Finds room for a new object, taking segments from the pool and
    /// reclaiming memory as needed.
    #[inline]
    fn find_room(
        &mut self,
        pool: &SegmentPool,
        size: u32,
        align: u32,
    ) -> Result<(Location, usize), Error> {
        match self.place(size, align) {
            Some(at) => Ok(at),
            None => self.find_room_slow(pool, size, align),
        }
    }

    /// `find_room` once the active segment is full (or absent).
    #[cold]
    fn find_room_slow(
        &mut self,
        pool: &SegmentPool,
        size: u32,
        align: u32,
    ) -> Result<(Location, usize), Error> {
        // Every reclaim step compacts a segment with at least the threshold
        // free, evicts something, or (forced) compacts a segment into room
        // the allocation can use, so a segment normally turns up within a
        // few steps; the bound only stops a pathological loop (a tiny
        // threshold with large objects, or forced steps on segments that are
        // almost full, can waste as much in segment tails as a step wins
        // back).
        let mut steps_left = 2 * pool.geometry().max_segments + 16;
        // Set when the pool first turns out dry: from then on the allocation
        // is reclaiming, and the time it takes is counted.
        let mut reclaiming: Option<Instant> = None;
        // Forced steps on this region give no segment back until the active
        // segment's room adds up to a victim's worth, but this loop closes
        // the active segment each time round. So each round of them must
        // leave more room plus free segments than the last; a few rounds in
        // a row that do not mean the objects cannot be packed any tighter.
        let (mut last_potential, mut stalls) = (None, 0);
        let out_of_memory = || Error::OutOfMemory {
            size: size as usize,
            limit: pool.memory_limit(),
        };
        let result = loop {
            if let Some(at) = self.place(size, align) {
                break Ok(at);
            }
            self.close_active(pool);
            if let Some(segment) = pool.take(Purpose::Allocation) {
                self.open(segment);
                continue;
            }
            reclaiming.get_or_insert_with(Instant::now);
            steps_left -= 1;
            if steps_left == 0 {
                break Err(out_of_memory());
            }
            if self.reclaim_step(pool) {
                (last_potential, stalls) = (None, 0);
                continue;
            }
            match self.forced_reclaim_step(pool, size, align) {
                Forced::Nothing => break Err(out_of_memory()),
                Forced::Other => {}
                Forced::Own => {
                    let potential =
                        pool.available_for_compaction() * self.segment_size + self.active_room();
                    if last_potential.is_some_and(|last| potential <= last) {
                        stalls += 1;
                        if stalls == FORCED_STALLS {
                            break Err(out_of_memory());
                        }
                    } else {
                        stalls = 0;
                    }
                    last_potential = Some(potential);
                }
            }
        };
        if let Some(started) = reclaiming {
            let elapsed = started.elapsed();
            self.reclaim_time += elapsed;
            pool.note_reclaim_time(elapsed);
        }
        result
    }

    #[inline]
    fn alloc(
        &mut self,
        pool: &SegmentPool,
        size: u32,
        align: u32,
        init: impl FnOnce(&mut [u8]),
    ) -> Result<Handle, Error> {
        let result = self
            .table
            .prepare(|| pool.take_part())
            .and_then(|()| self.find_room(pool, size, align));
        let (at, position) = match result {
            Ok(placed) => placed,
            Err(error) => {
                self.note_allocation_failure(pool);
                // `prepare` may have added a table part before the failure.
                self.sync_overhead();
                return Err(error);
            }
        };
        let handle = self.table.insert(at);
        // SAFETY: `find_room` reserved these bytes (`place` checked
        // `offset + size <= segment size`) in a segment the exclusively
        // locked region owns; no reference to them exists yet.
        init(unsafe {
            pool.memory()
                .bytes_mut(at.segment, at.offset as usize, size as usize)
        });
        // `place` counted the record as used; list its slot for compaction.
        let slots = &mut self.segments[position].slots;
        let capacity = slots.capacity();
        slots.push(handle.slot());
        self.slot_bytes += (slots.capacity() - capacity) * size_of::<u32>();
        self.object_bytes += size as usize;
        // The table or the slot list may have grown.
        self.sync_overhead();
        Ok(handle)
    }

    fn note_allocation_failure(&mut self, pool: &SegmentPool) {
        self.allocation_failures += 1;
        pool.note_allocation_failure();
    }

    /// Frees an object; returns its size.
    #[inline]
    fn free(&mut self, pool: &SegmentPool, handle: Handle) -> Result<u32, Error> {
        let at = self.table.remove(handle)?;
        let record = record_len(at.size);
        self.used -= record as usize;
        self.object_bytes -= at.size as usize;
        let segment_size = self.segment_size;
        let active = self.active == Some(at.segment);
        let position = self.segment_map[at.segment as usize] as usize;
        let info = &mut self.segments[position];
        if active {
            info.used -= record;
            if info.used == 0 {
                self.release(pool, at.segment);
            }
        } else {
            let used = info.used - record;
            if used > info.stay_above {
                // Common case: the segment stays in its bucket (and is not
                // empty: `stay_above` is at least 0).
                debug_assert!(info.slot.is_some_and(|slot| {
                    self.histogram
                        .same_bucket(slot, segment_size - used as usize)
                }));
                info.used = used;
                self.closed_free += record as usize;
            } else {
                self.histogram_remove(at.segment);
                self.info_mut(at.segment).used -= record;
                if self.info(at.segment).used == 0 {
                    self.release(pool, at.segment);
                } else {
                    self.histogram_insert(at.segment);
                }
            }
        }
        Ok(at.size)
    }

    /// Moves every live object out of closed `segment` into the active
    /// segment. True if the segment was emptied and released; false if no
    /// destination could be had (the objects moved so far stay moved, the
    /// rest stay put: nothing is lost).
    ///
    /// The hot loop of the allocator: per listed slot it does one table
    /// lookup (which also tells whether the object is still here), one copy
    /// and one entry write; the destination's bump pointer, byte count and
    /// slot list are kept in locals and written back once per destination.
    fn compact_segment(&mut self, pool: &SegmentPool, segment: u32) -> bool {
        self.histogram_remove(segment);
        self.reclaim_counter += 1;
        let memory = pool.memory();
        let slots = std::mem::take(&mut self.info_mut(segment).slots);
        // The taken list is dropped at the end (or replaced by its unmoved
        // tail): its bytes leave the count now.
        self.slot_bytes -= slots.capacity() * size_of::<u32>();
        let codec = self.table.codec();
        let segment_size = self.segment_size as u32;
        let mut moved = 0usize;
        let mut i = 0;
        let mut stopped = false;
        while i < slots.len() {
            // The destination: the active segment, else a fresh one (which
            // may come from the emergency reserve).
            let destination = match self.active {
                Some(active) => active,
                None => match pool.take(Purpose::Compaction) {
                    Some(fresh) => {
                        self.open(fresh);
                        fresh
                    }
                    None => {
                        stopped = true;
                        break;
                    }
                },
            };
            let position = self.segment_map[destination as usize] as usize;
            let info = &mut self.segments[position];
            let (source, target) = (memory.base(segment), memory.base(destination));
            let (mut end, mut added) = (info.end, 0u32);
            let listed_before = info.slots.capacity();
            let destination_slots = &mut info.slots;
            i = self
                .table
                .visit_live_in_segment(&slots, i, segment, |slot, entry, from| {
                    let offset = (end + from.align - 1) & !(from.align - 1);
                    let record = record_len(from.size);
                    if offset + record > segment_size {
                        return false;
                    }
                    debug_assert!(from.offset + from.size <= segment_size);
                    #[allow(
                        clippy::disallowed_methods,
                        reason = "compaction's object copy; it stays here until region.rs is split (issue 12)"
                    )]
                    // SAFETY: `source` and `target` are the bases of two
                    // different segments (the one being compacted left the
                    // histogram above and is never active; the target is the
                    // active one, opened fresh from the pool), both owned by
                    // this exclusively locked region, so nothing borrows
                    // their bytes (every `ObjectRef`/`ObjectMut`/`Evictor`
                    // slice holds this lock, and the lock is not
                    // re-entrant) and the ranges cannot overlap. The source
                    // range is a live object, inside its segment; the target
                    // range ends at `offset + record <= segment_size`
                    // (checked above).
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            source.add(from.offset as usize),
                            target.add(offset as usize),
                            from.size as usize,
                        );
                    }
                    *entry = codec.relocated(*entry, destination, offset);
                    destination_slots.push(slot);
                    end = offset + record;
                    added += record;
                    true
                });
            info.end = end;
            info.used += added;
            let listed_after = info.slots.capacity();
            self.slot_bytes += (listed_after - listed_before) * size_of::<u32>();
            moved += added as usize;
            if i < slots.len() {
                // The next object does not fit: on to a fresh destination.
                self.close_active(pool);
            }
        }
        self.info_mut(segment).used -= moved as u32;
        if stopped {
            // Out of destinations: the objects not yet moved stay listed here.
            let rest = slots[i..].to_vec();
            self.slot_bytes += rest.capacity() * size_of::<u32>();
            self.info_mut(segment).slots = rest;
        }
        self.bytes_compacted += moved as u64;
        let emptied = self.info(segment).used == 0;
        if emptied {
            self.release(pool, segment);
            self.segments_compacted += 1;
        } else {
            self.histogram_insert(segment);
        }
        self.sync_overhead();
        pool.note_compaction(moved, usize::from(emptied));
        emptied
    }

    /// The sparsest closed segment and its free bytes, if compacting it is
    /// worthwhile: it has at least the pool's threshold free (15% by
    /// default) and the closed segments hold at
    /// least a whole segment of free space between them.
    fn compaction_candidate(&mut self) -> Option<(u32, usize)> {
        if self.closed_free < self.segment_size {
            return None;
        }
        let segment = self.histogram.sparsest()?;
        let free = self.segment_size - self.info(segment).used as usize;
        (free * 100 >= self.segment_size * self.min_free_percent).then_some((segment, free))
    }

    /// What moving the live objects of closed `segment` would do: how many
    /// fresh segments it would open, and the end of the last destination
    /// afterwards (the active segment's new bump pointer). Places them, in
    /// compaction order, after the active segment's end as `place` would. A
    /// slot listed twice is counted twice, which can only overestimate both.
    fn move_plan(&self, segment: u32) -> (usize, u32) {
        let segment_size = self.segment_size as u32;
        let after = |end: u32, at: &Location| {
            let offset = (end + at.align - 1) & !(at.align - 1);
            let end = offset + record_len(at.size);
            (end <= segment_size).then_some(end)
        };
        let mut end = self.active.map(|active| self.info(active).end);
        let mut needed = 0;
        for &slot in &self.info(segment).slots {
            let Some(from) = self.table.live_location(slot) else {
                continue;
            };
            if from.segment != segment {
                continue;
            }
            end = match end.and_then(|end| after(end, &from)) {
                Some(end) => Some(end),
                None => {
                    needed += 1;
                    after(0, &from)
                }
            };
        }
        (needed, end.unwrap_or(0))
    }

    /// Free bytes after the active segment's bump pointer (0 without one).
    fn active_room(&self) -> usize {
        self.active.map_or(0, |active| {
            self.segment_size - self.info(active).end as usize
        })
    }

    /// Reclaim's last resort, once free segments, ordinary compaction (of
    /// every unborrowed region) and eviction have found nothing: compacts
    /// the sparsest closed segment however little of it is free, as long as
    /// that cannot lower the number of segments the pool can hand out.
    ///
    /// It runs only while the closed segments hold at least two segments'
    /// worth of free space (one to win back, one of slack for the segment
    /// tails and alignment padding that moving objects wastes), and only if
    /// moving the segment's objects opens at most one fresh destination and
    /// the pool has it: the emptied segment goes back, so the pool's free
    /// segments never drop and each step either frees a segment outright or
    /// leaves the active segment with more room (a step that would not is
    /// refused before anything moves). True if a segment was
    /// compacted, with the number of fresh destinations it opened (0 means a
    /// segment went back to the pool net).
    ///
    /// The pool's count is a snapshot: if another thread's compaction takes
    /// the last segment before this one needs it, `compact_segment` stops
    /// part-way, as it always can, and loses nothing.
    fn forced_compaction(&mut self, pool: &SegmentPool) -> Option<usize> {
        if self.closed_free < 2 * self.segment_size {
            return None;
        }
        let segment = self.histogram.sparsest()?;
        let (needed, end_after) = self.move_plan(segment);
        if needed > 1 || needed > pool.available_for_compaction() {
            return None;
        }
        // A step that opens a destination gives no segment back net; it is
        // worth a segment's worth of copying only if it leaves more room in
        // the active segment than there is now. Without this, segments that
        // are full but for tails too small for any object (fixed-size
        // objects that do not divide the segment size) would be moved
        // around forever, each move leaving the same tail behind.
        if needed == 1 && self.segment_size - end_after as usize <= self.active_room() {
            return None;
        }
        let free = self.segment_size - self.info(segment).used as usize;
        let below_threshold = free * 100 < self.segment_size * self.min_free_percent;
        if !self.compact_segment(pool, segment) {
            return None;
        }
        if below_threshold {
            self.forced_compactions += 1;
            pool.note_forced_compaction();
        }
        Some(needed)
    }

    /// Whether an object of `size` bytes aligned to `align` fits in the
    /// active segment as it stands.
    fn fits(&self, size: u32, align: u32) -> bool {
        self.active.is_some_and(|active| {
            let offset = (self.info(active).end + align - 1) & !(align - 1);
            offset + record_len(size) <= self.segment_size as u32
        })
    }

    /// Forced compaction for this region's own allocation of `size` bytes
    /// aligned to `align`: forced steps on this region until the active
    /// segment has room for the object or a step gave a segment back to the
    /// pool. The active segment stays open between steps, so the room each
    /// step leaves adds up (a single step may leave less than the object
    /// needs). Then, if nothing here applies, one forced step on another
    /// unborrowed region (whose active segment also stays open, so repeated
    /// steps there end up giving a segment back). Says which of the two
    /// compacted something, or `Forced::Nothing` if none applies.
    fn forced_reclaim_step(&mut self, pool: &SegmentPool, size: u32, align: u32) -> Forced {
        let mut progressed = false;
        for _ in 0..=self.histogram.len() {
            if self.fits(size, align) {
                break;
            }
            match self.forced_compaction(pool) {
                None => break,
                Some(needed) => {
                    progressed = true;
                    if needed == 0 {
                        break;
                    }
                }
            }
        }
        if progressed {
            return Forced::Own;
        }
        let other = pool.other_regions(self.id).iter().any(|region| {
            region
                .inner
                .try_write()
                .is_some_and(|mut inner| inner.forced_compaction(pool).is_some())
        });
        if other {
            Forced::Other
        } else {
            Forced::Nothing
        }
    }

    fn compact(&mut self, pool: &SegmentPool) -> usize {
        let mut compacted = 0;
        // Each step frees at least the threshold of a segment of closed free space
        // net; the bound is a backstop, not the expected exit.
        let bound = 2 * self.segments.len() + 2;
        while compacted < bound {
            let Some((segment, _)) = self.compaction_candidate() else {
                break;
            };
            if !self.compact_segment(pool, segment) {
                break;
            }
            compacted += 1;
        }
        compacted
    }

    fn full_compaction(&mut self, pool: &SegmentPool) -> Result<(), Error> {
        self.close_active(pool);
        let closed: Vec<u32> = self.histogram.segments().collect();
        for segment in closed {
            if !self.compact_segment(pool, segment) {
                return Err(Error::CompactionOutOfMemory {
                    limit: pool.memory_limit(),
                });
            }
        }
        Ok(())
    }

    /// Calls the eviction callback once. True if it freed something.
    fn evict_once(&mut self, pool: &SegmentPool) -> bool {
        let Some(mut evict) = self.evictor.take() else {
            return false;
        };
        self.reclaim_counter += 1;
        let (objects, bytes) = (self.table.live(), self.object_bytes);
        let verdict = evict(&mut Evictor { inner: self, pool });
        self.evictor = Some(evict);
        let freed = bytes - self.object_bytes;
        self.bytes_evicted += freed as u64;
        pool.note_eviction(freed);
        verdict == Eviction::Evicted && self.table.live() < objects
    }

    /// One step of reclaim after the pool refused a segment: compact the
    /// sparsest compactible region (this one or any other that is not
    /// borrowed), else evict from an evictable region. False if nothing
    /// could be done.
    fn reclaim_step(&mut self, pool: &SegmentPool) -> bool {
        let others = pool.other_regions(self.id);
        let own = self.compaction_candidate().map(|(_, free)| free);
        let mut candidates: Vec<(usize, usize)> = others
            .iter()
            .enumerate()
            .filter_map(|(i, region)| {
                let mut inner = region.inner.try_write()?;
                inner.compaction_candidate().map(|(_, free)| (free, i))
            })
            .collect();
        candidates.sort_unstable_by(|a, b| b.cmp(a));
        for &(free, i) in &candidates {
            if own.is_some_and(|own| own >= free) {
                break;
            }
            if let Some(mut inner) = others[i].inner.try_write()
                && let Some((segment, _)) = inner.compaction_candidate()
                && inner.compact_segment(pool, segment)
            {
                return true;
            }
        }
        if let Some((segment, _)) = self.compaction_candidate()
            && self.compact_segment(pool, segment)
        {
            return true;
        }
        if self.evict_once(pool) {
            return true;
        }
        others.iter().any(|region| {
            region
                .inner
                .try_write()
                .is_some_and(|mut inner| inner.evict_once(pool))
        })
    }

    /// Segments plus table and slot lists, as the listener knows them.
    fn reported_footprint(&self) -> usize {
        self.total() + self.overhead_reported
    }

    fn listen(&mut self, listener: Arc<dyn RegionListener>) {
        self.unlisten();
        self.overhead_reported = self.overhead();
        listener.add(self.id, self.reported_footprint());
        // Grounding is permanent: a new listener must not take a region
        // sealed for flush for a flushable one.
        if self.grounded {
            listener.ground_evictable(self.id);
        }
        self.listener = Some(listener);
    }

    fn unlisten(&mut self) {
        if let Some(old) = self.listener.take() {
            old.del(self.id, self.reported_footprint());
            self.overhead_reported = 0;
        }
    }

    /// Takes over all of `other`'s segments and handles; `other` ends dead.
    fn absorb(&mut self, pool: &SegmentPool, other: &mut RegionInner) {
        if let Some(segment) = other.active
            && other.info(segment).used == 0
        {
            other.release(pool, segment);
        }
        // What `other`'s listener knows of it, and what this region's
        // listener must now count: the segments at once, the table parts and
        // slot lists (adopted whole) through `sync_overhead` below.
        let reported = other.reported_footprint();
        match (&self.listener, other.listener.take()) {
            (Some(mine), Some(theirs)) if Arc::ptr_eq(mine, &theirs) => {
                mine.merged(self.id, other.id, reported);
                self.overhead_reported += other.overhead_reported;
            }
            (mine, theirs) => {
                if let Some(theirs) = theirs {
                    theirs.del(other.id, reported);
                }
                let segments = other.total();
                if let Some(mine) = mine
                    && segments > 0
                {
                    mine.increase_usage(self.id, segments);
                }
            }
        }
        other.overhead_reported = 0;
        self.slot_bytes += other.slot_bytes;
        let other_active = other.active.take();
        for info in other.segments.drain(..) {
            let index = info.index as usize;
            if self.segment_map.len() <= index {
                self.segment_map.resize(index + 1, NOT_MAPPED);
            }
            self.segment_map[index] = self.segments.len() as u32;
            self.segments.push(SegmentInfo { slot: None, ..info });
            if other_active == Some(info.index) && self.active.is_none() {
                self.active = Some(info.index);
            } else {
                self.histogram_insert(info.index);
            }
        }
        let table = std::mem::replace(&mut other.table, HandleTable::new(pool.geometry()));
        self.table.absorb(table);
        self.used += other.used;
        self.object_bytes += other.object_bytes;
        self.bytes_compacted += other.bytes_compacted;
        self.segments_compacted += other.segments_compacted;
        self.forced_compactions += other.forced_compactions;
        self.bytes_evicted += other.bytes_evicted;
        self.allocation_failures += other.allocation_failures;
        self.reclaim_time += other.reclaim_time;
        self.reclaim_counter = self.reclaim_counter.max(other.reclaim_counter);
        other.retire_empty();
        self.sync_overhead();
    }

    /// Marks a region that owns nothing any more as dead.
    fn retire_empty(&mut self) {
        self.dead = true;
        self.segment_map = Vec::new();
        self.segments = Vec::new();
        self.active = None;
        self.histogram = Histogram::new(self.segment_size.trailing_zeros());
        self.closed_free = 0;
        self.used = 0;
        self.object_bytes = 0;
        self.slot_bytes = 0;
        self.overhead_reported = 0;
        self.listener = None;
        self.evictor = None;
    }

    /// Gives everything back to the pool (the region is being dropped).
    fn retire(&mut self, pool: &SegmentPool) {
        if self.dead {
            return;
        }
        self.unlisten();
        for info in &self.segments {
            pool.release(info.index);
        }
        pool.release_tags(self.table.tags());
        self.table = HandleTable::new(pool.geometry());
        self.retire_empty();
    }

    /// Heap bytes of the segments' slot lists, recounted (`slot_bytes` is
    /// the running count).
    fn recount_slot_bytes(&self) -> usize {
        self.segments
            .iter()
            .map(|info| info.slots.capacity() * size_of::<u32>())
            .sum()
    }

    pub(crate) fn stats(&self) -> RegionStats {
        let total = self.total();
        RegionStats {
            total_bytes: total,
            used_bytes: self.used,
            free_bytes: total - self.used,
            object_bytes: self.object_bytes,
            objects: self.table.live(),
            segments: self.segments.len(),
            table_bytes: self.overhead(),
            bytes_compacted: self.bytes_compacted,
            segments_compacted: self.segments_compacted,
            forced_compactions: self.forced_compactions,
            bytes_evicted: self.bytes_evicted,
            allocation_failures: self.allocation_failures,
            reclaim_time: self.reclaim_time,
            reclaim_counter: self.reclaim_counter,
        }
    }

    /// Recounts everything from the segments and the table.
    pub(crate) fn check(&self) -> Result<(), String> {
        self.table.check()?;
        if self.slot_bytes != self.recount_slot_bytes() {
            return Err(format!(
                "slot lists count {} bytes, recount {}",
                self.slot_bytes,
                self.recount_slot_bytes()
            ));
        }
        let expected_reported = if self.listener.is_some() {
            self.overhead()
        } else {
            0
        };
        if self.overhead_reported != expected_reported {
            return Err(format!(
                "the listener knows {} bytes of table and slot lists, the region holds {}",
                self.overhead_reported, expected_reported
            ));
        }
        let segment_size = self.segment_size;
        let mut mapped = 0;
        for (i, &position) in self.segment_map.iter().enumerate() {
            if position != NOT_MAPPED {
                mapped += 1;
                if self.segments.get(position as usize).map(|s| s.index) != Some(i as u32) {
                    return Err(format!("segment map entry {i} points at the wrong segment"));
                }
            }
        }
        if mapped != self.segments.len() {
            return Err(format!(
                "{mapped} mapped segments, {} held",
                self.segments.len()
            ));
        }
        // Every live object, grouped by segment: it must lie below its
        // segment's end, overlap no other object and be on its slot list.
        let mut objects: Vec<Vec<(u32, u32, u32)>> = vec![Vec::new(); self.segments.len()];
        for (slot, at) in self.table.live_entries() {
            let position = self
                .segment_map
                .get(at.segment as usize)
                .copied()
                .filter(|&p| p != NOT_MAPPED)
                .ok_or_else(|| format!("slot {slot:#x} points at unowned segment {at:?}"))?;
            if at.offset % at.align != 0 {
                return Err(format!("slot {slot:#x} is misaligned: {at:?}"));
            }
            objects[position as usize].push((at.offset, record_len(at.size), slot));
        }
        let (mut used, mut closed_free, mut live) = (0usize, 0usize, 0usize);
        for (info, objects) in self.segments.iter().zip(&mut objects) {
            objects.sort_unstable();
            let mut previous_end = 0;
            let mut segment_used = 0;
            let listed: std::collections::HashSet<u32> = info.slots.iter().copied().collect();
            for &(offset, length, slot) in objects.iter() {
                if offset < previous_end || offset + length > info.end {
                    return Err(format!(
                        "object of slot {slot:#x} at {}:{offset}+{length} overlaps another or \
                         the segment's end {}",
                        info.index, info.end
                    ));
                }
                if !listed.contains(&slot) {
                    return Err(format!(
                        "slot {slot:#x} is missing from segment {}'s slot list",
                        info.index
                    ));
                }
                previous_end = offset + length;
                segment_used += length as usize;
            }
            live += objects.len();
            if info.end as usize > segment_size {
                return Err(format!("segment {} overruns its end", info.index));
            }
            if segment_used != info.used as usize {
                return Err(format!(
                    "segment {} counts {} used bytes, recount {segment_used}",
                    info.index, info.used
                ));
            }
            used += segment_used;
            if segment_used == 0 {
                return Err(format!("empty segment {} was not released", info.index));
            }
            if self.active == Some(info.index) {
                if info.slot.is_some() {
                    return Err("the active segment is in the histogram".into());
                }
            } else {
                let free = segment_size - segment_used;
                match info.slot {
                    Some(slot)
                        if self.histogram.holds(info.index, slot, free)
                            && info.stay_above == self.histogram.used_floor(slot) => {}
                    _ => {
                        return Err(format!(
                            "segment {} is misplaced in the histogram",
                            info.index
                        ));
                    }
                }
                closed_free += free;
            }
        }
        let closed = self.segments.len() - usize::from(self.active.is_some());
        if self.histogram.len() != closed {
            return Err(format!(
                "histogram holds {}, {closed} closed",
                self.histogram.len()
            ));
        }
        let object_bytes: usize = self
            .table
            .live_entries()
            .map(|(_, at)| at.size as usize)
            .sum();
        if used != self.used
            || closed_free != self.closed_free
            || object_bytes != self.object_bytes
            || live != self.table.live()
        {
            return Err(format!(
                "counters (used {}, closed free {}, object bytes {}, objects {}) != recount \
                 ({used}, {closed_free}, {object_bytes}, {live})",
                self.used,
                self.closed_free,
                self.object_bytes,
                self.table.live()
            ));
        }
        Ok(())
    }
}

/// A region: a set of segments that objects are bump-allocated into.
///
/// See the [crate documentation](crate) for the design. All methods that
/// change the region take `&mut self`; [`get`](Self::get) takes `&self` and
/// returns a guard that keeps the region from being compacted by other
/// regions' reclaim while the bytes are borrowed.
pub struct Region {
    pool: Arc<SegmentPool>,
    shared: Arc<RegionShared>,
    key: usize,
}

impl fmt::Debug for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Region")
            .field("id", &self.shared.id)
            .finish_non_exhaustive()
    }
}

/// Shared access to an object's bytes; see [`Region::get`].
///
/// Holds the region's lock in shared mode: reclaim on behalf of other
/// regions skips this region until the guard is dropped.
///
/// The guard borrows the [`Region`], so the borrow checker rules out
/// everything that could move, overwrite or free the bytes while it lives:
/// it cannot outlive the region,
///
/// ```compile_fail
/// # use logalloc::{PoolConfig, Region, SegmentPool};
/// # let pool = SegmentPool::new(PoolConfig::default().with_memory_limit(4 << 20)).unwrap();
/// let mut region = Region::new(&pool);
/// let h = region.alloc_bytes(b"x").unwrap();
/// let bytes = region.get(h).unwrap();
/// drop(region); // error: `region` is still borrowed by `bytes`
/// assert_eq!(&*bytes, b"x");
/// ```
///
/// nor coexist with [`Region::get_mut`] (or any other `&mut` method:
/// `free`, `compact`, `full_compaction`, allocation),
///
/// ```compile_fail
/// # use logalloc::{PoolConfig, Region, SegmentPool};
/// # let pool = SegmentPool::new(PoolConfig::default().with_memory_limit(4 << 20)).unwrap();
/// let mut region = Region::new(&pool);
/// let h = region.alloc_bytes(b"x").unwrap();
/// let seen = region.get(h).unwrap();
/// region.get_mut(h).unwrap()[0] = b'y'; // error: `region` is borrowed
/// assert_eq!(&*seen, b"x");
/// ```
///
/// nor with a [`Region::merge`] of its region into another:
///
/// ```compile_fail
/// # use logalloc::{PoolConfig, Region, SegmentPool};
/// # let pool = SegmentPool::new(PoolConfig::default().with_memory_limit(4 << 20)).unwrap();
/// let mut into = Region::new(&pool);
/// let mut region = Region::new(&pool);
/// let h = region.alloc_bytes(b"x").unwrap();
/// let seen = region.get(h).unwrap();
/// into.merge(region).unwrap(); // error: `region` is moved while borrowed
/// assert_eq!(&*seen, b"x");
/// ```
pub struct ObjectRef<'a> {
    _guard: RwLockReadGuard<'a, RegionInner>,
    bytes: &'a [u8],
}

impl fmt::Debug for ObjectRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ObjectRef").field(&self.bytes).finish()
    }
}

impl Deref for ObjectRef<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.bytes
    }
}

/// Exclusive access to an object's bytes; see [`Region::get_mut`].
pub struct ObjectMut<'a> {
    _guard: RwLockWriteGuard<'a, RegionInner>,
    bytes: &'a mut [u8],
}

impl fmt::Debug for ObjectMut<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ObjectMut").field(&self.bytes).finish()
    }
}

impl Deref for ObjectMut<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.bytes
    }
}

impl DerefMut for ObjectMut<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        self.bytes
    }
}

impl Region {
    /// Creates an empty region in `pool`. It takes no segment until its
    /// first allocation.
    pub fn new(pool: &Arc<SegmentPool>) -> Region {
        let id = pool.next_region_id();
        let shared = Arc::new(RegionShared {
            id,
            inner: RwLock::new(RegionInner::new(id, pool)),
        });
        let key = pool.register(shared.clone());
        Region {
            pool: pool.clone(),
            shared,
            key,
        }
    }

    /// This region's pool-unique id.
    pub fn id(&self) -> RegionId {
        self.shared.id
    }

    /// The pool this region takes segments from.
    pub fn pool(&self) -> &Arc<SegmentPool> {
        &self.pool
    }

    #[inline]
    fn validate(&self, size: usize, align: usize) -> Result<(u32, u32), Error> {
        let max_align = crate::config::MAX_ALIGN.min(self.pool.segment_size() / 8);
        if !align.is_power_of_two() || align > max_align {
            return Err(Error::InvalidAlignment {
                align,
                max: max_align,
            });
        }
        let max = self.pool.max_object_size();
        if size > max {
            return Err(Error::ObjectTooLarge { size, max });
        }
        // Both fit: size <= 10% of a segment <= 6.4 MiB, align <= 4096.
        Ok((size as u32, align as u32))
    }

    /// Allocates an object of `size` bytes aligned to `align` and lets
    /// `init` write its bytes in place, under one exclusive lock (no
    /// zero-fill, no second lookup through [`get_mut`](Self::get_mut)).
    /// `init` must not touch this region (it cannot: the region is
    /// borrowed mutably). Errors as for [`alloc`](Self::alloc); on error
    /// `init` was not called.
    #[inline]
    pub fn alloc_with(
        &mut self,
        size: usize,
        align: usize,
        init: impl FnOnce(&mut [u8]),
    ) -> Result<Handle, Error> {
        let (size, align) = self.validate(size, align)?;
        let mut inner = self.shared.inner.write();
        alloc_locked(&self.pool, &mut inner, size, align, init)
    }

    /// Allocates a zero-filled object of `size` bytes aligned to `align`
    /// (a power of two, at most 4096 and at most 1/8 of a segment).
    ///
    /// If the pool has no free segment, reclaims first (compaction of this
    /// or other unborrowed regions, then eviction). Errors:
    /// [`Error::ObjectTooLarge`] above 10% of a segment,
    /// [`Error::InvalidAlignment`], [`Error::OutOfMemory`] when nothing can
    /// be reclaimed, [`Error::InjectedFailure`]. On error nothing was
    /// allocated and every existing object is intact.
    pub fn alloc(&mut self, size: usize, align: usize) -> Result<Handle, Error> {
        self.alloc_with(size, align, |bytes| bytes.fill(0))
    }

    /// Allocates a copy of `data` (alignment 1). Errors as for [`alloc`](Self::alloc).
    #[inline]
    pub fn alloc_bytes(&mut self, data: &[u8]) -> Result<Handle, Error> {
        self.alloc_with(data.len(), 1, |bytes| bytes.copy_from_slice(data))
    }

    /// Frees an object. Errors ([`Error::StaleHandle`],
    /// [`Error::ForeignHandle`]) free nothing.
    #[inline]
    pub fn free(&mut self, handle: Handle) -> Result<(), Error> {
        self.shared
            .inner
            .write()
            .free(&self.pool, handle)
            .map(|_| ())
    }

    /// The bytes of an object.
    ///
    /// The guard holds the region's lock in shared mode: any number of
    /// guards can be alive at once, while reclaim for other regions skips
    /// this one.
    pub fn get(&self, handle: Handle) -> Result<ObjectRef<'_>, Error> {
        let guard = self.shared.inner.read();
        let at = guard.table.lookup(handle)?;
        // SAFETY: `at` is a live entry, so the object is in a segment this
        // region owns, with `offset + size <= segment size` (only `place` and
        // compaction write entries, and both check the segment's end), and a
        // segment is released only when no live entry points into it. A
        // handle this region did not issue still reaches only this region's
        // own entries. The guard moves into the returned value, so the region
        // stays read-locked while `bytes` is reachable: writers (the owner's
        // `&mut` methods, other regions' reclaim) are excluded, and the
        // segment memory lives as long as the pool, which `self` keeps alive.
        let bytes = unsafe {
            self.pool
                .memory()
                .bytes(at.segment, at.offset as usize, at.size as usize)
        };
        Ok(ObjectRef {
            _guard: guard,
            bytes,
        })
    }

    /// The bytes of an object, mutably.
    pub fn get_mut(&mut self, handle: Handle) -> Result<ObjectMut<'_>, Error> {
        let guard = self.shared.inner.write();
        let at = guard.table.lookup(handle)?;
        // SAFETY: as in `get`, with the lock held exclusively by the guard
        // that moves into the returned value and `&mut self` ruling out any
        // other reference into this region's segments.
        let bytes = unsafe {
            self.pool
                .memory()
                .bytes_mut(at.segment, at.offset as usize, at.size as usize)
        };
        Ok(ObjectMut {
            _guard: guard,
            bytes,
        })
    }

    /// Compacts the sparsest closed segments (those with at least the pool's
    /// [`compaction_min_free_percent`](crate::PoolConfig::compaction_min_free_percent)
    /// free, 15% by default)
    /// while the closed segments hold at least a segment's worth of free
    /// space. Returns how many segments were emptied and released.
    pub fn compact(&mut self) -> usize {
        self.shared.inner.write().compact(&self.pool)
    }

    /// Moves every live object (for tests): closes the active segment and
    /// compacts every closed segment regardless of occupancy. Fails with
    /// [`Error::CompactionOutOfMemory`] if no destination segment can be had;
    /// every object is intact either way.
    pub fn full_compaction(&mut self) -> Result<(), Error> {
        self.shared.inner.write().full_compaction(&self.pool)
    }

    /// Incremented on every compaction or eviction of this region (also
    /// when run by another region's reclaim). If it has not changed, no
    /// object of the region has moved.
    pub fn reclaim_counter(&self) -> u64 {
        self.shared.inner.read().reclaim_counter
    }

    /// Makes the region evictable: when the pool is dry and compaction is
    /// not enough, reclaim calls `evict`, which should free some objects
    /// through the [`Evictor`] (in the caller's LRU order) and say whether
    /// it did. It runs on whichever thread needs memory, with this region
    /// locked: it must not touch this or any other region except through
    /// the `Evictor`, nor block on a lock held around region operations.
    pub fn set_eviction_fn(
        &mut self,
        evict: impl FnMut(&mut Evictor<'_>) -> Eviction + Send + Sync + 'static,
    ) {
        self.shared.inner.write().evictor = Some(Box::new(evict));
    }

    /// Makes the region non-evictable again.
    pub fn clear_eviction_fn(&mut self) {
        self.shared.inner.write().evictor = None;
    }

    /// Starts reporting usage to `listener` (replacing any previous one,
    /// which gets `del`); fires `add` with the current total at once, then
    /// `ground_evictable` if the region is grounded.
    pub fn listen(&mut self, listener: Arc<dyn RegionListener>) {
        self.shared.inner.write().listen(listener);
    }

    /// Stops reporting; the listener gets `del`. No-op without a listener.
    pub fn unlisten(&mut self) {
        self.shared.inner.write().unlisten();
    }

    /// Grounds the region's evictable occupancy (permanent); the listener
    /// gets `ground_evictable`, and so does every listener the region
    /// reports to later. Takes `&self`: it changes no object.
    pub fn ground_evictable_occupancy(&self) {
        let mut inner = self.shared.inner.write();
        inner.grounded = true;
        if let Some(listener) = &inner.listener {
            listener.ground_evictable(inner.id);
        }
    }

    /// Whether [`ground_evictable_occupancy`](Self::ground_evictable_occupancy) was called.
    pub fn is_grounded(&self) -> bool {
        self.shared.inner.read().grounded
    }

    /// Moves all of `other`'s segments and objects into this region without
    /// copying any object: every handle `other` issued is valid here. The
    /// listeners hear `merged` if both regions report to the same one,
    /// otherwise `del` (to `other`'s) and `increase_usage` (to this one's).
    /// This region keeps its own eviction callback and listener.
    ///
    /// Fails with [`Error::PoolMismatch`] (changing nothing; `other` is
    /// dropped as usual) if the regions belong to different pools.
    pub fn merge(&mut self, other: Region) -> Result<(), Error> {
        if !Arc::ptr_eq(&self.pool, &other.pool) {
            return Err(Error::PoolMismatch);
        }
        let mut mine = self.shared.inner.write();
        let mut theirs = other.shared.inner.write();
        mine.absorb(&self.pool, &mut theirs);
        Ok(())
    }

    /// A snapshot of the region's statistics.
    pub fn stats(&self) -> RegionStats {
        self.shared.inner.read().stats()
    }

    /// Recounts occupancy, objects and free space from the segments and the
    /// handle table and compares them with the region's counters; also
    /// checks the histogram, the segment map and the table's free lists.
    /// Linear in the region's size: for tests and debugging.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.shared.inner.read().check()
    }
}

/// Allocates under an exclusive lock already held: the injected-failure
/// check, then the allocation proper.
#[inline]
fn alloc_locked(
    pool: &SegmentPool,
    inner: &mut RegionInner,
    size: u32,
    align: u32,
    init: impl FnOnce(&mut [u8]),
) -> Result<Handle, Error> {
    if pool.injected_failure() {
        inner.note_allocation_failure(pool);
        return Err(Error::InjectedFailure {
            size: size as usize,
        });
    }
    inner.alloc(pool, size, align, init)
}

/// The bytes of the live object `handle` of a region whose lock the caller
/// holds (shared or exclusive) for at least `'a`.
#[inline]
fn object_bytes<'a>(
    pool: &'a SegmentPool,
    inner: &'a RegionInner,
    handle: Handle,
) -> Result<&'a [u8], Error> {
    let at = inner.table.lookup(handle)?;
    // SAFETY: `at` is a live entry of this region's table, so the object is
    // in a segment the region owns, inside its bounds (see `Region::get`).
    // `inner` borrows a lock guard for `'a`, so no writer (the owner's
    // `&mut` methods, other regions' reclaim) can move, overwrite or free
    // the bytes while the slice lives; a `RegionWriter` hands out this slice
    // only through `&self`, which excludes its own `&mut` methods.
    Ok(unsafe {
        pool.memory()
            .bytes(at.segment, at.offset as usize, at.size as usize)
    })
}

/// Shared access to many objects of a region under one acquisition of its
/// lock; see [`Region::reader`].
///
/// While it lives, reclaim on behalf of other regions skips this region,
/// exactly as while an [`ObjectRef`] lives. Every slice it hands out borrows
/// the reader, so none can outlive the lock.
pub struct RegionReader<'a> {
    guard: RwLockReadGuard<'a, RegionInner>,
    pool: &'a SegmentPool,
}

impl fmt::Debug for RegionReader<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegionReader")
            .field("region", &self.guard.id)
            .finish_non_exhaustive()
    }
}

impl RegionReader<'_> {
    /// The bytes of an object. Errors: [`Error::StaleHandle`],
    /// [`Error::ForeignHandle`].
    #[inline]
    pub fn get(&self, handle: Handle) -> Result<&[u8], Error> {
        object_bytes(self.pool, &self.guard, handle)
    }

    fn max_object_size(&self) -> usize {
        self.pool.max_object_size()
    }

    /// A snapshot of the region's statistics (under the lock already held).
    pub fn stats(&self) -> RegionStats {
        self.guard.stats()
    }

    /// The chunks of a [`ManagedBytes`] string, comparable without copying.
    pub fn managed(&self, bytes: ManagedBytes) -> Result<ManagedRef<'_>, Error> {
        ManagedRef::resolve(bytes, self.max_object_size(), |h| self.get(h))
    }
}

/// Exclusive access to a region under one acquisition of its lock: many
/// allocations, frees and in-place writes without re-locking; see
/// [`Region::writer`].
pub struct RegionWriter<'a> {
    guard: RwLockWriteGuard<'a, RegionInner>,
    region: &'a Region,
}

impl fmt::Debug for RegionWriter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegionWriter")
            .field("region", &self.guard.id)
            .finish_non_exhaustive()
    }
}

impl RegionWriter<'_> {
    /// As [`Region::alloc_with`]: allocates and initialises an object in
    /// place.
    #[inline]
    pub fn alloc_with(
        &mut self,
        size: usize,
        align: usize,
        init: impl FnOnce(&mut [u8]),
    ) -> Result<Handle, Error> {
        let (size, align) = self.region.validate(size, align)?;
        alloc_locked(&self.region.pool, &mut self.guard, size, align, init)
    }

    /// As [`Region::alloc_bytes`].
    #[inline]
    pub fn alloc_bytes(&mut self, data: &[u8]) -> Result<Handle, Error> {
        self.alloc_with(data.len(), 1, |bytes| bytes.copy_from_slice(data))
    }

    /// As [`Region::free`].
    #[inline]
    pub fn free(&mut self, handle: Handle) -> Result<(), Error> {
        self.guard.free(&self.region.pool, handle).map(|_| ())
    }

    /// The bytes of an object.
    #[inline]
    pub fn get(&self, handle: Handle) -> Result<&[u8], Error> {
        object_bytes(&self.region.pool, &self.guard, handle)
    }

    /// The bytes of an object, mutably.
    #[inline]
    pub fn get_mut(&mut self, handle: Handle) -> Result<&mut [u8], Error> {
        let at = self.guard.table.lookup(handle)?;
        // SAFETY: as in `Region::get_mut`: a live entry inside a segment the
        // region owns, with the lock held exclusively by `self.guard` for as
        // long as the returned slice borrows `self` mutably, so no other
        // reference into the region's segments exists.
        Ok(unsafe {
            self.region
                .pool
                .memory()
                .bytes_mut(at.segment, at.offset as usize, at.size as usize)
        })
    }

    /// Stores `data` as a [`ManagedBytes`] string: one object if it fits the
    /// largest object, otherwise chunks of the largest object size plus an
    /// index object of their handles. All or nothing: on error every chunk
    /// already allocated is freed again. Errors: those of allocation, and
    /// [`Error::ManagedTooLarge`] above
    /// [`ManagedBytes::max_len`]`(max object size)`.
    pub fn alloc_managed(&mut self, data: &[u8]) -> Result<ManagedBytes, Error> {
        let max = self.region.pool.max_object_size();
        if data.len() <= max {
            let head = self.alloc_bytes(data)?;
            return Ok(ManagedBytes::new(head, data.len()));
        }
        let limit = ManagedBytes::max_len(max);
        if data.len() > limit {
            return Err(Error::ManagedTooLarge {
                size: data.len(),
                max: limit,
            });
        }
        let mut chunks = Vec::with_capacity(data.len().div_ceil(max));
        for chunk in data.chunks(max) {
            match self.alloc_bytes(chunk) {
                Ok(h) => chunks.push(h),
                Err(e) => {
                    self.free_all(&chunks);
                    return Err(e);
                }
            }
        }
        let index = self.alloc_with(chunks.len() * 8, 8, |bytes| {
            for (slot, h) in bytes.chunks_exact_mut(8).zip(&chunks) {
                slot.copy_from_slice(&h.to_raw().to_le_bytes());
            }
        });
        match index {
            Ok(head) => Ok(ManagedBytes::new(head, data.len())),
            Err(e) => {
                self.free_all(&chunks);
                Err(e)
            }
        }
    }

    fn free_all(&mut self, handles: &[Handle]) {
        for &h in handles {
            // Just allocated by us under this lock: cannot be stale.
            let freed = self.free(h);
            debug_assert!(freed.is_ok());
        }
    }

    /// Frees a [`ManagedBytes`] string (its chunks and index). Errors
    /// ([`Error::StaleHandle`], [`Error::ForeignHandle`]) free nothing.
    pub fn free_managed(&mut self, bytes: ManagedBytes) -> Result<(), Error> {
        if !bytes.is_chunked(self.region.pool.max_object_size()) {
            return self.free(bytes.head());
        }
        let chunks: Vec<Handle> = ManagedRef::index_handles(self.get(bytes.head())?)?;
        for &h in &chunks {
            self.guard.table.lookup(h)?;
        }
        self.free_all(&chunks);
        self.free(bytes.head())
    }

    fn max_object_size(&self) -> usize {
        self.region.pool.max_object_size()
    }

    /// The chunks of a [`ManagedBytes`] string.
    pub fn managed(&self, bytes: ManagedBytes) -> Result<ManagedRef<'_>, Error> {
        ManagedRef::resolve(bytes, self.max_object_size(), |h| self.get(h))
    }

    /// A snapshot of the region's statistics.
    pub fn stats(&self) -> RegionStats {
        self.guard.stats()
    }
}

impl Region {
    /// Takes the region's lock in shared mode once, for many
    /// [`get`](RegionReader::get)s; see [`RegionReader`].
    pub fn reader(&self) -> RegionReader<'_> {
        RegionReader {
            guard: self.shared.inner.read(),
            pool: &self.pool,
        }
    }

    /// Takes the region's lock exclusively once, for many allocations,
    /// frees and in-place writes; see [`RegionWriter`].
    pub fn writer(&mut self) -> RegionWriter<'_> {
        RegionWriter {
            guard: self.shared.inner.write(),
            region: self,
        }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        self.shared.inner.write().retire(&self.pool);
        self.pool.unregister(self.key);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::PoolConfig;

    fn pool(segments: usize) -> Arc<SegmentPool> {
        SegmentPool::new(
            PoolConfig::default()
                .with_segment_size(4096)
                .with_memory_limit(segments * 4096)
                .with_bulk_segments(4),
        )
        .unwrap()
    }

    #[test]
    fn segments_hold_only_object_bytes() {
        let pool = pool(8);
        let mut region = Region::new(&pool);
        region.alloc_bytes(&[1; 5]).unwrap();
        let h = region.alloc(2, 2).unwrap();
        let empty = region.alloc(0, 1).unwrap();
        let stats = region.stats();
        assert_eq!(
            stats.used_bytes,
            5 + 2 + 1,
            "a zero-size object takes one byte"
        );
        assert_eq!(stats.object_bytes, 7);
        assert_eq!(stats.objects, 3);
        assert_eq!(stats.total_bytes, 4096);
        assert_eq!(&*region.get(h).unwrap(), &[0, 0]);
        assert!(region.get(empty).unwrap().is_empty());
        region.check_invariants().unwrap();
    }

    #[test]
    fn over_aligned_objects_are_aligned_and_survive_compaction() {
        let pool = pool(8);
        let mut region = Region::new(&pool);
        let mut handles = Vec::new();
        for (i, align) in [1usize, 8, 64, 512, 16].into_iter().enumerate() {
            let h = region.alloc(24, align).unwrap();
            region.get_mut(h).unwrap().fill(i as u8);
            handles.push((h, align, i as u8));
        }
        for round in 0..2 {
            for &(h, align, fill) in &handles {
                let bytes = region.get(h).unwrap();
                assert_eq!(
                    bytes.as_ptr() as usize % align,
                    0,
                    "round {round}, align {align}"
                );
                assert!(bytes.iter().all(|&b| b == fill));
            }
            region.full_compaction().unwrap();
            region.check_invariants().unwrap();
        }
    }

    #[test]
    fn freeing_everything_returns_every_segment() {
        let pool = pool(8);
        let mut region = Region::new(&pool);
        let handles: Vec<_> = (0..100)
            .map(|i| region.alloc_bytes(&[i; 200]).unwrap())
            .collect();
        assert!(region.stats().segments >= 5);
        for h in handles {
            region.free(h).unwrap();
            region.check_invariants().unwrap();
        }
        assert_eq!(region.stats().segments, 0);
        assert_eq!(region.stats().used_bytes, 0);
        pool.check_invariants().unwrap();
    }

    #[test]
    fn a_slot_reused_in_the_same_segment_is_moved_once() {
        let pool = pool(8);
        let mut region = Region::new(&pool);
        let keep = region.alloc_bytes(&[9; 300]).unwrap();
        let first = region.alloc_bytes(&[1; 300]).unwrap();
        region.free(first).unwrap();
        // LIFO free list: the same slot, appended again to the same segment.
        let second = region.alloc_bytes(&[2; 300]).unwrap();
        assert_eq!(first.to_raw() >> 32, second.to_raw() >> 32, "slot reused");
        let listed = region.shared.inner.read().segments[0].slots.len();
        assert_eq!(listed, 3, "the slot is listed twice");
        region.full_compaction().unwrap();
        assert_eq!(&*region.get(second).unwrap(), &[2; 300][..]);
        assert_eq!(&*region.get(keep).unwrap(), &[9; 300][..]);
        assert!(region.get(first).is_err());
        let stats = region.stats();
        assert_eq!(stats.bytes_compacted, 600, "each live object moved once");
        assert_eq!(stats.used_bytes, 600);
        region.check_invariants().unwrap();
    }

    #[test]
    fn compact_releases_sparse_segments_and_bumps_the_counter() {
        let pool = pool(16);
        let mut region = Region::new(&pool);
        let handles: Vec<_> = (0..200u8)
            .map(|i| region.alloc_bytes(&[i; 100]).unwrap())
            .collect();
        let before = region.stats();
        for h in handles.iter().step_by(2) {
            region.free(*h).unwrap();
        }
        let counter = region.reclaim_counter();
        let released = region.compact();
        assert!(released >= 2, "released {released}");
        assert!(region.reclaim_counter() > counter);
        let after = region.stats();
        assert!(after.segments < before.segments);
        assert_eq!(after.segments_compacted, released as u64);
        assert!(after.bytes_compacted > 0);
        for (i, h) in handles.iter().enumerate().skip(1).step_by(2) {
            assert!(region.get(*h).unwrap().iter().all(|&b| b == i as u8));
        }
        region.check_invariants().unwrap();
        pool.check_invariants().unwrap();
    }
}
