//! Merge: one region takes over another's segments and handle-table parts
//! whole, copying no object.

use super::inner::{NOT_MAPPED, RegionInner, SegmentInfo};
use crate::pool::SegmentPool;
use crate::sync::PlainArc;
use crate::table::HandleTable;

impl RegionInner {
    /// Takes over all of `other`'s segments and handles; `other` ends dead.
    pub(super) fn absorb(&mut self, pool: &SegmentPool, other: &mut RegionInner) {
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
            (Some(mine), Some(theirs)) if PlainArc::ptr_eq(mine, &theirs) => {
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
}
