//! The state behind a region's lock ([`RegionInner`]) and the bookkeeping
//! every operation shares: the segments a region owns (the active one and
//! the closed ones in the histogram), opening and releasing them, statistics,
//! the listener's view of the footprint, and retirement.

use std::fmt;
use std::time::Duration;

use super::reclaim::EvictionFn;
use crate::histogram::{Histogram, Slot};
use crate::pool::SegmentPool;
use crate::stats::RegionStats;
use crate::sync::PlainArc;
use crate::table::HandleTable;
use crate::{RegionId, RegionListener};

/// A `segment_map` entry for a pool segment this region does not own.
pub(super) const NOT_MAPPED: u32 = u32::MAX;

/// Bytes of segment an object of `size` bytes takes with a `header`-byte
/// size header in front of it (0 without one): its header and its size, the
/// size counted as at least one byte. So every object has its own place,
/// and its first byte lies inside its segment: the entry's offset field
/// holds offsets below the segment size only.
#[inline]
pub(super) fn record_len(size: u32, header: u32) -> u32 {
    header + size.max(1)
}

/// Where an object of `size` bytes aligned to `align`, with a `header`-byte
/// header in front of it, goes in a segment whose bump pointer is at `end`:
/// `(offset of its first byte, end of its record)`. Its header takes the
/// `header` bytes before `offset` (in the alignment padding if there is
/// room).
#[inline]
pub(super) fn placement(end: u32, size: u32, align: u32, header: u32) -> (u32, u32) {
    let offset = (end + header + align - 1) & !(align - 1);
    (offset, offset - header + record_len(size, header))
}

/// Per-segment bookkeeping of the owning region.
#[derive(Debug, Clone)]
pub(super) struct SegmentInfo {
    pub(super) index: u32,
    /// Bytes of live objects (at least one per object).
    pub(super) used: u32,
    /// End of the last object (the bump pointer of the active segment).
    pub(super) end: u32,
    /// Position in the histogram while the segment is closed.
    pub(super) slot: Option<Slot>,
    /// While closed: `Histogram::used_floor` of `slot`, so `free` can tell
    /// with one comparison that the segment stays in its bucket.
    pub(super) stay_above: u32,
    /// Slots of the objects appended to this segment, in order; some may
    /// since have been freed or moved.
    pub(super) slots: Vec<u32>,
}

/// Everything a region knows, behind its lock.
pub(crate) struct RegionInner {
    pub(super) id: RegionId,
    /// Dropped or merged into another region: owns nothing any more.
    pub(super) dead: bool,
    pub(super) segment_size: usize,
    /// Bytes of the size header in front of every object (0: sizes are in
    /// the table's entries); see `Geometry::header_bytes`.
    pub(super) header: u32,
    /// Compact a closed segment only with at least this percentage free.
    pub(super) min_free_percent: usize,
    pub(super) table: HandleTable,
    /// Pool segment index to position in `segments` (or `NOT_MAPPED`).
    pub(super) segment_map: Vec<u32>,
    pub(super) segments: Vec<SegmentInfo>,
    pub(super) active: Option<u32>,
    pub(super) histogram: Histogram,
    /// Free bytes of all closed segments.
    pub(super) closed_free: usize,
    pub(super) used: usize,
    pub(super) object_bytes: usize,
    pub(super) bytes_compacted: u64,
    pub(super) segments_compacted: u64,
    pub(super) forced_compactions: u64,
    pub(super) bytes_evicted: u64,
    pub(super) allocation_failures: u64,
    /// Heap bytes of the segments' slot lists (their capacities), kept up
    /// to date wherever a list is created, grown, shrunk or dropped.
    pub(super) slot_bytes: usize,
    /// The table and slot-list bytes included in what the listener was
    /// told (0 without a listener); `sync_overhead` brings it up to date.
    pub(super) overhead_reported: usize,
    /// Time this region's allocations spent reclaiming (pool dry).
    pub(super) reclaim_time: Duration,
    pub(super) reclaim_counter: u64,
    pub(super) listener: Option<PlainArc<dyn RegionListener>>,
    pub(super) evictor: Option<EvictionFn>,
    pub(super) grounded: bool,
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
    pub(super) fn new(id: RegionId, pool: &SegmentPool) -> RegionInner {
        let geometry = pool.geometry();
        RegionInner {
            id,
            dead: false,
            segment_size: geometry.segment_size,
            header: geometry.header_bytes,
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

    pub(super) fn total(&self) -> usize {
        self.segments.len() * self.segment_size
    }

    #[inline]
    pub(super) fn info(&self, segment: u32) -> &SegmentInfo {
        &self.segments[self.segment_map[segment as usize] as usize]
    }

    #[inline]
    pub(super) fn info_mut(&mut self, segment: u32) -> &mut SegmentInfo {
        &mut self.segments[self.segment_map[segment as usize] as usize]
    }

    pub(crate) fn segment_indices(&self) -> impl Iterator<Item = u32> + '_ {
        self.segments.iter().map(|info| info.index)
    }

    /// Makes `segment` (just taken from the pool) the active segment.
    pub(super) fn open(&mut self, segment: u32) {
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
    pub(super) fn release(&mut self, pool: &SegmentPool, segment: u32) {
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
    pub(super) fn overhead(&self) -> usize {
        self.table.bytes() + self.slot_bytes
    }

    /// Tells the listener (if any) how the table and slot lists grew or
    /// shrank since it last heard, so that its total stays equal to the
    /// footprint: segments plus table plus slot lists. Called after every
    /// step that can change them; it costs a comparison when nothing did.
    #[inline]
    pub(super) fn sync_overhead(&mut self) {
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

    pub(super) fn histogram_insert(&mut self, segment: u32) {
        let free = self.segment_size - self.info(segment).used as usize;
        let slot = self.histogram.insert(segment, free);
        let stay_above = self.histogram.used_floor(slot);
        let info = self.info_mut(segment);
        info.slot = Some(slot);
        info.stay_above = stay_above;
        self.closed_free += free;
    }

    pub(super) fn histogram_remove(&mut self, segment: u32) {
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
    pub(super) fn close_active(&mut self, pool: &SegmentPool) {
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

    /// Segments plus table and slot lists, as the listener knows them.
    pub(super) fn reported_footprint(&self) -> usize {
        self.total() + self.overhead_reported
    }

    pub(super) fn listen(&mut self, listener: PlainArc<dyn RegionListener>) {
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

    pub(super) fn unlisten(&mut self) {
        if let Some(old) = self.listener.take() {
            old.del(self.id, self.reported_footprint());
            self.overhead_reported = 0;
        }
    }

    /// Marks a region that owns nothing any more as dead.
    pub(super) fn retire_empty(&mut self) {
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
    pub(super) fn retire(&mut self, pool: &SegmentPool) {
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
}
