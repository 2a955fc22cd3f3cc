//! Allocation and free: bump allocation into the active segment, and the
//! accounting a free does (a segment leaves its histogram bucket only when
//! its occupancy crosses the bucket's floor). When the active segment is
//! full, allocation goes on in `find_room_slow` (see `reclaim.rs`).

use super::inner::{RegionInner, record_len};
use crate::pool::SegmentPool;
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
    pub(super) fn free(&mut self, pool: &SegmentPool, handle: Handle) -> Result<u32, Error> {
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
