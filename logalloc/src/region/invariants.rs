//! The invariant checker: recounts a region's state from its segments and
//! its handle table (for tests and debugging).

use super::inner::{NOT_MAPPED, RegionInner, record_len};
use crate::segment::SegmentMemory;

impl RegionInner {
    /// Heap bytes of the segments' slot lists, recounted (`slot_bytes` is
    /// the running count).
    fn recount_slot_bytes(&self) -> usize {
        self.segments
            .iter()
            .map(|info| info.slots.capacity() * size_of::<u32>())
            .sum()
    }

    /// Recounts everything from the segments and the table.
    pub(crate) fn check(&self, memory: &SegmentMemory) -> Result<(), String> {
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
        let mut object_bytes = 0usize;
        for (slot, at) in self.live_objects(memory) {
            let position = self
                .segment_map
                .get(at.segment as usize)
                .copied()
                .filter(|&p| p != NOT_MAPPED)
                .ok_or_else(|| format!("slot {slot:#x} points at unowned segment {at:?}"))?;
            if at.offset % at.align != 0 {
                return Err(format!("slot {slot:#x} is misaligned: {at:?}"));
            }
            if at.offset < self.header {
                return Err(format!("slot {slot:#x} has no room for its header: {at:?}"));
            }
            object_bytes += at.size as usize;
            // The record starts at the object's header.
            let start = at.offset - self.header;
            objects[position as usize].push((start, record_len(at.size, self.header), slot));
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
