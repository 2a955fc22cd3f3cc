//! Compaction: moving the live objects of a closed segment into the active
//! segment so the emptied segment can go back to the pool; ordinary
//! compaction of the sparsest segments, full compaction, and the forced
//! compaction that reclaim falls back to.

use super::inner::{RegionInner, placement, record_len};
use crate::Error;
use crate::pool::{Purpose, SegmentPool};
use crate::segment::SegmentMemory;
use crate::table::Location;

/// Forced compaction runs only while the closed segments hold at least this
/// many segments' worth of free space: one to win back, one of slack for the
/// segment tails and alignment padding that moving objects wastes.
const FORCED_MIN_FREE_SEGMENTS: usize = 2;

/// One `compact` call compacts at most this many segments per segment the
/// region holds, plus [`COMPACT_EXTRA_STEPS`]: a backstop, not the expected
/// exit (each step frees at least the threshold of a segment net).
const COMPACT_STEPS_PER_SEGMENT: usize = 2;

/// See [`COMPACT_STEPS_PER_SEGMENT`].
const COMPACT_EXTRA_STEPS: usize = 2;

impl RegionInner {
    /// Moves every live object out of closed `segment` into the active
    /// segment. True if the segment was emptied and released; false if no
    /// destination could be had (the objects moved so far stay moved, the
    /// rest stay put: nothing is lost).
    ///
    /// The hot loop of the allocator: per listed slot it does one table
    /// lookup (which also tells whether the object is still here), one copy
    /// and one entry write; the destination's bump pointer, byte count and
    /// slot list are kept in locals and written back once per destination.
    pub(super) fn compact_segment(&mut self, pool: &SegmentPool, segment: u32) -> bool {
        self.histogram_remove(segment);
        self.reclaim_counter += 1;
        let memory = pool.memory();
        let slots = std::mem::take(&mut self.info_mut(segment).slots);
        // The taken list is dropped at the end (or replaced by its unmoved
        // tail): its bytes leave the count now.
        self.slot_bytes -= slots.capacity() * size_of::<u32>();
        let codec = self.table.codec();
        let segment_size = self.segment_size as u32;
        let header = self.header;
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
            let pair = memory.pair(segment, destination);
            let (mut end, mut added) = (info.end, 0u32);
            let listed_before = info.slots.capacity();
            let destination_slots = &mut info.slots;
            i = self
                .table
                .visit_live_in_segment(&slots, i, segment, |slot, entry, from| {
                    // SAFETY: `from` is a live entry of this exclusively
                    // locked region, in `segment`, which it owns.
                    let size = unsafe { memory.object_size(from) };
                    let (offset, record_end) = placement(end, size, from.align, header);
                    if record_end > segment_size {
                        return false;
                    }
                    let record = record_len(size, header);
                    debug_assert!(from.offset + size <= segment_size);
                    // SAFETY: `pair` joins two different segments (the one
                    // being compacted left the histogram above and is never
                    // active; the target is the active one, opened fresh from
                    // the pool), both owned by this exclusively locked
                    // region, so nothing borrows their bytes (every
                    // `ObjectRef`/`ObjectMut`/`Evictor` slice holds this
                    // lock, and the lock is not re-entrant). The source range
                    // is a live object and its header, inside its segment;
                    // the target range, the same length, ends at
                    // `record_end <= segment_size` (checked above).
                    unsafe {
                        pair.copy(
                            (from.offset - header) as usize,
                            (offset - header) as usize,
                            record as usize,
                        );
                    }
                    *entry = codec.relocated(*entry, destination, offset);
                    destination_slots.push(slot);
                    end = record_end;
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
    pub(super) fn compaction_candidate(&mut self) -> Option<(u32, usize)> {
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
    fn move_plan(&self, memory: &SegmentMemory, segment: u32) -> (usize, u32) {
        let segment_size = self.segment_size as u32;
        let after = |end: u32, at: &Location| {
            let (_, end) = placement(end, at.size, at.align, self.header);
            (end <= segment_size).then_some(end)
        };
        let mut end = self.active.map(|active| self.info(active).end);
        let mut needed = 0;
        for &slot in &self.info(segment).slots {
            let Some(mut from) = self.table.live_location(slot) else {
                continue;
            };
            if from.segment != segment {
                continue;
            }
            // SAFETY: `from` is a live entry of this region (locked: `self`
            // is behind its lock), in `segment`, which it owns.
            from.size = unsafe { memory.object_size(from) };
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
    pub(super) fn active_room(&self) -> usize {
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
    pub(super) fn forced_compaction(&mut self, pool: &SegmentPool) -> Option<usize> {
        if self.closed_free < FORCED_MIN_FREE_SEGMENTS * self.segment_size {
            return None;
        }
        let segment = self.histogram.sparsest()?;
        let (needed, end_after) = self.move_plan(pool.memory(), segment);
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

    pub(super) fn compact(&mut self, pool: &SegmentPool) -> usize {
        let mut compacted = 0;
        // Each step frees at least the threshold of a segment of closed free space
        // net; the bound is a backstop, not the expected exit.
        let bound = COMPACT_STEPS_PER_SEGMENT * self.segments.len() + COMPACT_EXTRA_STEPS;
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

    pub(super) fn full_compaction(&mut self, pool: &SegmentPool) -> Result<(), Error> {
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
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::Region;
    use super::super::test_pool as pool;

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
