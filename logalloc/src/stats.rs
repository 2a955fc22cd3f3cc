//! Statistics snapshots of regions and pools.

use std::time::Duration;

/// A snapshot of one region's memory use and activity.
///
/// Byte counts are exact, not estimates: `total_bytes` is whole segments,
/// `used_bytes` the bytes those segments spend on live objects (their sizes,
/// a zero-size object counting one byte, plus their size headers in pools
/// that have them), and `table_bytes` the heap memory of
/// the handle table and the segments' slot lists, which live outside the
/// segments.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RegionStats {
    /// Bytes of segments held (segments × segment size). With
    /// `table_bytes`, the footprint a listener is told
    /// ([`footprint_bytes`](Self::footprint_bytes)).
    pub total_bytes: usize,
    /// Bytes of segments occupied by live objects.
    pub used_bytes: usize,
    /// `total_bytes - used_bytes`: holes, alignment padding and unused
    /// segment tails.
    pub free_bytes: usize,
    /// Sum of the sizes of live objects as requested.
    pub object_bytes: usize,
    /// Number of live objects.
    pub objects: usize,
    /// Number of segments held.
    pub segments: usize,
    /// Heap bytes of the handle table (8 per slot) and of the segments' slot
    /// lists (4 per object appended to a segment since it was last emptied).
    pub table_bytes: usize,
    /// Bytes moved by compaction.
    pub bytes_compacted: u64,
    /// Segments emptied by compaction.
    pub segments_compacted: u64,
    /// Of those, segments compacted with less than the pool's
    /// [`compaction_min_free_percent`](crate::PoolConfig::compaction_min_free_percent)
    /// free, because an allocation would otherwise have failed (reclaim's
    /// last resort before eviction fails; see the crate documentation).
    pub forced_compactions: u64,
    /// Object bytes freed by eviction callbacks.
    pub bytes_evicted: u64,
    /// Allocations refused for lack of memory (injected failures included).
    pub allocation_failures: u64,
    /// Wall-clock time this region's allocations spent reclaiming memory
    /// (compacting or evicting, in this or other regions) because the pool
    /// had no free segment: the stall an allocating writer saw. Explicit
    /// [`compact`](crate::Region::compact) and
    /// [`full_compaction`](crate::Region::full_compaction) calls are not
    /// counted.
    pub reclaim_time: Duration,
    /// Incremented on every compaction and eviction of the region; a reader
    /// that cached positions compares it to see whether objects may have moved.
    pub reclaim_counter: u64,
}

impl RegionStats {
    /// `used_bytes / total_bytes`, or 0 for a region without segments.
    pub fn occupancy(&self) -> f64 {
        if self.total_bytes == 0 {
            0.0
        } else {
            self.used_bytes as f64 / self.total_bytes as f64
        }
    }

    /// Everything the region keeps from other uses: segments plus handle
    /// table and slot lists. This is what the region reports to its
    /// [`RegionListener`](crate::RegionListener).
    pub fn footprint_bytes(&self) -> usize {
        self.total_bytes + self.table_bytes
    }

    /// Adds `other` field by field (the reclaim counter takes the maximum).
    pub(crate) fn add(&mut self, other: &RegionStats) {
        self.total_bytes += other.total_bytes;
        self.used_bytes += other.used_bytes;
        self.free_bytes += other.free_bytes;
        self.object_bytes += other.object_bytes;
        self.objects += other.objects;
        self.segments += other.segments;
        self.table_bytes += other.table_bytes;
        self.bytes_compacted += other.bytes_compacted;
        self.segments_compacted += other.segments_compacted;
        self.forced_compactions += other.forced_compactions;
        self.bytes_evicted += other.bytes_evicted;
        self.allocation_failures += other.allocation_failures;
        self.reclaim_time += other.reclaim_time;
        self.reclaim_counter = self.reclaim_counter.max(other.reclaim_counter);
    }
}

/// A snapshot of a pool's state and cumulative counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolStats {
    /// The segment size in bytes.
    pub segment_size: usize,
    /// The memory limit in bytes (whole segments).
    pub memory_limit: usize,
    /// Segments owned by regions.
    pub segments_in_use: usize,
    /// Segments that could still be handed out (free list plus not yet
    /// allocated from the system), reserve included.
    pub free_segments: usize,
    /// Segments kept for compaction destinations.
    pub emergency_reserve: usize,
    /// Bytes taken from the system allocator so far (never above the limit).
    pub system_bytes: usize,
    /// Regions alive in the pool.
    pub regions: usize,
    /// Bytes moved by compaction, all regions.
    pub bytes_compacted: u64,
    /// Segments emptied by compaction, all regions.
    pub segments_compacted: u64,
    /// Of those, segments compacted below the free-space threshold because
    /// an allocation would otherwise have failed, all regions.
    pub forced_compactions: u64,
    /// Object bytes freed by eviction, all regions.
    pub bytes_evicted: u64,
    /// Allocations refused for lack of memory, all regions.
    pub allocation_failures: u64,
    /// Time allocations spent reclaiming because the pool was dry, all
    /// regions (see [`RegionStats::reclaim_time`]).
    pub reclaim_time: Duration,
}

impl PoolStats {
    /// Bytes of segments owned by regions.
    pub fn used_bytes(&self) -> usize {
        self.segments_in_use * self.segment_size
    }

    /// Bytes of segments that could still be handed out, reserve included.
    pub fn free_bytes(&self) -> usize {
        self.free_segments * self.segment_size
    }

    /// `used_bytes / memory_limit`: the share of the limit held by regions.
    /// For occupancy by live objects see
    /// [`SegmentPool::region_totals`](crate::SegmentPool::region_totals).
    pub fn occupancy(&self) -> f64 {
        if self.memory_limit == 0 {
            0.0
        } else {
            self.used_bytes() as f64 / self.memory_limit as f64
        }
    }
}
