//! The listener interface through which a region reports its memory usage.
//!
//! A region reports changes of its footprint to at most one listener, so
//! that a higher layer (`region-group`) can account for memory without
//! logalloc knowing anything about groups. The footprint is everything the
//! region keeps from other uses: its segments (reported a segment at a time,
//! as they are taken and released) and the heap memory of its handle table
//! and slot lists (reported as they grow and shrink), which is what
//! [`RegionStats::footprint_bytes`](crate::RegionStats::footprint_bytes)
//! counts.

use std::fmt;

/// A process-unique identifier of a region.
///
/// Ids are assigned by the [`SegmentPool`](crate::SegmentPool) when a region
/// is created and are never reused by that pool. A region that is merged into
/// another keeps no id of its own afterwards: its memory is reported under the
/// id of the region it was merged into.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RegionId(u64);

impl RegionId {
    /// Wraps a raw id. Intended for listeners' tests and for maps keyed by id.
    pub const fn from_raw(raw: u64) -> Self {
        RegionId(raw)
    }

    /// The raw value of this id.
    pub const fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Debug for RegionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RegionId({})", self.0)
    }
}

impl fmt::Display for RegionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "region#{}", self.0)
    }
}

/// Receives the footprint changes of the regions that listen to it.
///
/// All sizes are *total* footprint in bytes: whole segments held by the
/// region plus the heap bytes of its handle table and slot lists
/// ([`RegionStats::footprint_bytes`](crate::RegionStats::footprint_bytes)),
/// not bytes used by live objects: that is the memory the region keeps away
/// from everyone else. Segments come and go a segment at a time; the table
/// and slot lists change by smaller steps (a slot list doubling, a table part
/// growing by up to 32 KiB), each reported when it happens, so a listener's
/// total equals the region's footprint after every region operation.
///
/// # Calling context
///
/// Callbacks may run on any thread (a region can be compacted by another
/// region's reclaim) and run while the reporting region is internally locked.
/// An implementation must therefore be quick, must not allocate from or
/// otherwise touch any logalloc region, and must not block on anything that a
/// region operation could be waiting for. Updating counters under a short
/// lock of its own is the intended use.
///
/// It should not panic either: a callback can run in the middle of a
/// compaction, and a panic unwinds out of it with the region's bookkeeping
/// half-done. Memory safety and every live object's bytes are kept (the
/// locks are released on unwind and a half-moved segment is never given
/// back while objects remain in it), but later operations on that region
/// may panic and its segments may stay held until it is dropped.
pub trait RegionListener: Send + Sync {
    /// `region` started reporting to this listener; its footprint is
    /// currently `total` bytes.
    fn add(&self, region: RegionId, total: usize);

    /// `region` stopped reporting to this listener (it was unlistened,
    /// dropped, or merged into a region with another listener); its
    /// footprint was `total` bytes at that moment.
    fn del(&self, region: RegionId, total: usize);

    /// `region`'s footprint grew by `delta` bytes (a segment taken, or its
    /// handle table or slot lists grown).
    fn increase_usage(&self, region: RegionId, delta: usize);

    /// `region`'s footprint shrank by `delta` bytes (a segment released, or
    /// its slot lists shrunk or dropped).
    fn decrease_usage(&self, region: RegionId, delta: usize);

    /// `from`, which reported to this same listener, was merged into `into`:
    /// its footprint of `moved` bytes now belongs to `into`, and `from` will
    /// not report again. The merge itself moves bytes without changing the
    /// listener's total; adopting `from`'s table parts can then change the
    /// tables' bookkeeping a little (`into`'s part list may grow, `from`'s
    /// is freed), which follows as an
    /// [`increase_usage`](Self::increase_usage) or a
    /// [`decrease_usage`](Self::decrease_usage).
    ///
    /// When the two regions report to different listeners, the merge is
    /// reported instead as [`del`](Self::del) to `from`'s listener and
    /// [`increase_usage`](Self::increase_usage) to `into`'s.
    fn merged(&self, into: RegionId, from: RegionId, moved: usize);

    /// `region` was grounded: from now on it should be treated as having no
    /// evictable (flushable) memory for ordering purposes, although its
    /// segments still count as used. Grounding is permanent.
    fn ground_evictable(&self, region: RegionId);
}
