//! Allocation and free: bump allocation into the active segment, and the
//! accounting a free does (a segment leaves its histogram bucket only when
//! its occupancy crosses the bucket's floor). When the active segment is
//! full, allocation goes on in `find_room_slow` (see `reclaim.rs`).

use super::inner::{NOT_MAPPED, RegionInner, placement, record_len};
use crate::pool::SegmentPool;
use crate::segment::SegmentMemory;
use crate::table::Location;
use crate::{Error, Handle};

impl RegionInner {
    /// Reserves room for an object in the active segment (after any
    /// alignment padding), and counts its record as used. Returns the
    /// location and the segment's position in `segments`; `None` if it does
    /// not fit (nothing changed).
    #[inline]
    pub(super) fn place(&mut self, size: u32, align: u32) -> Option<(Location, usize)> {
        let segment = self.active?;
        let segment_size = self.segment_size as u32;
        let position = self.segment_map[segment as usize] as usize;
        let info = &mut self.segments[position];
        let (offset, end) = placement(info.end, size, align, self.header);
        if end > segment_size {
            return None;
        }
        let record = record_len(size, self.header);
        info.end = end;
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
        let header = self.header as usize;
        // SAFETY: `find_room` reserved these bytes, the object and its
        // header in front of it (`place` checked that the record ends
        // within the segment, and put the object at least `header` bytes
        // in), in a segment the exclusively locked region owns; no
        // reference to them exists yet.
        let record = unsafe {
            pool.memory().bytes_mut(
                at.segment,
                at.offset as usize - header,
                header + size as usize,
            )
        };
        let (size_header, object) = record.split_at_mut(header);
        size_header.copy_from_slice(&size.to_le_bytes()[..header]);
        init(object);
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
    pub(super) fn free(&mut self, pool: &SegmentPool, handle: Handle) -> Result<u32, Error> {
        let at = self.table.remove(handle)?;
        // SAFETY: `at` was a live entry of this exclusively locked region
        // (just freed in the table, but its bytes are untouched).
        let size = unsafe { pool.memory().object_size(at) };
        let record = record_len(size, self.header);
        self.used -= record as usize;
        self.object_bytes -= size as usize;
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
        Ok(size)
    }
}

impl RegionInner {
    /// Every live object as (slot, location with its size), for the
    /// invariant checker. `memory` must be the memory of this region's pool.
    /// A size in a header is read only where the entry points into a
    /// segment this region owns, with room for the header in front: a
    /// corrupt entry keeps [`SIZE_IN_HEADER`](crate::table::SIZE_IN_HEADER)
    /// for the checker to report, instead of a read outside the region.
    pub(super) fn live_objects<'a>(
        &'a self,
        memory: &'a SegmentMemory,
    ) -> impl Iterator<Item = (u32, Location)> + 'a {
        self.table.live_entries().map(move |(slot, mut at)| {
            let owned = self
                .segment_map
                .get(at.segment as usize)
                .is_some_and(|&position| position != NOT_MAPPED);
            if owned && at.offset >= self.header {
                // SAFETY: a live entry of this region, which stays locked
                // while `self` is borrowed (`RegionInner` lives behind the
                // lock), in a segment it owns of its pool's memory, with
                // its header inside the segment.
                at.size = unsafe { memory.object_size(at) };
            }
            (slot, at)
        })
    }
}

/// Allocates under an exclusive lock already held: the injected-failure
/// check, then the allocation proper.
#[inline]
pub(super) fn alloc_locked(
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::Region;
    use super::super::test_pool as pool;

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
    fn headers_hold_sizes_in_front_of_objects() {
        let config = crate::PoolConfig {
            object_headers: true,
            ..crate::PoolConfig::default()
        }
        .with_segment_size(4096)
        .with_memory_limit(8 * 4096)
        .with_bulk_segments(4);
        let pool = crate::SegmentPool::new(config).unwrap();
        let mut region = Region::new(&pool);
        let a = region.alloc_bytes(&[1; 5]).unwrap();
        let h = region.alloc(2, 2).unwrap();
        let empty = region.alloc(0, 1).unwrap();
        let aligned = region.alloc_bytes(&[3; 300]).unwrap();
        let stats = region.stats();
        // 2 + 5, 2 + 2 (the header fits in the padding before the aligned
        // object: 7 -> header at 8, object at 10), 2 + 1 (an empty object
        // takes a byte, as without headers), 2 + 300.
        assert_eq!(stats.used_bytes, 7 + 4 + 3 + 302);
        assert_eq!(stats.object_bytes, 5 + 2 + 300);
        assert_eq!(&*region.get(a).unwrap(), &[1; 5]);
        assert_eq!(&*region.get(h).unwrap(), &[0, 0]);
        assert!(region.get(empty).unwrap().is_empty());
        assert_eq!(&*region.get(aligned).unwrap(), &[3; 300][..]);
        region.get_mut(h).unwrap().copy_from_slice(&[9, 8]);
        region.full_compaction().unwrap();
        assert_eq!(&*region.get(h).unwrap(), &[9, 8]);
        assert_eq!(&*region.get(aligned).unwrap(), &[3; 300][..]);
        region.free(aligned).unwrap();
        assert_eq!(region.stats().used_bytes, 7 + 4 + 3);
        region.check_invariants().unwrap();
        pool.check_invariants().unwrap();
    }

    /// An empty object whose header fits in the last bytes of the active
    /// segment must still start inside the segment: the entry's offset
    /// field holds offsets below the segment size only, and an offset equal
    /// to it spilled into the segment field (segment 0 read as segment 1).
    #[test]
    fn an_empty_object_never_starts_at_its_segments_end() {
        let config = crate::PoolConfig {
            object_headers: true,
            ..crate::PoolConfig::default()
        }
        .with_segment_size(4096)
        .with_memory_limit(8 * 4096)
        .with_bulk_segments(4);
        let pool = crate::SegmentPool::new(config).unwrap();
        let mut region = Region::new(&pool);
        // Ten records of 2 + 407 bytes end at 4090, one of 2 + 2 at 4094:
        // the 2-byte header of an empty object aligned to 16 fits in the
        // segment's last two bytes, and its first byte would be at 4096.
        let filler: Vec<_> = (0..10)
            .map(|_| region.alloc_bytes(&[1; 407]).unwrap())
            .collect();
        let last = region.alloc_bytes(&[2; 2]).unwrap();
        assert_eq!(region.stats().used_bytes, 4094);
        assert_eq!(region.stats().segments, 1);
        let empty = region.alloc(0, 16).unwrap();
        region.check_invariants().unwrap();
        assert!(region.get(empty).unwrap().is_empty());
        assert_eq!(
            region.stats().segments,
            2,
            "the empty object opened a new segment"
        );
        // It moves in compaction and frees like any other object.
        region.full_compaction().unwrap();
        assert!(region.get(empty).unwrap().is_empty());
        region.free(empty).unwrap();
        assert!(region.get(empty).is_err());
        for h in filler {
            assert_eq!(&*region.get(h).unwrap(), &[1; 407][..]);
        }
        assert_eq!(&*region.get(last).unwrap(), &[2; 2]);
        region.check_invariants().unwrap();
        pool.check_invariants().unwrap();
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
}
