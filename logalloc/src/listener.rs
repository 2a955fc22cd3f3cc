//! The listener interface through which a region reports its memory usage.
//!
//! A region reports segment-granular changes to at most one listener, so that
//! a higher layer (`region-group`) can account for memory without logalloc
//! knowing anything about groups.

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

/// Receives segment-granular usage changes of the regions that listen to it.
///
/// All sizes are *total* footprint in bytes (whole segments held by the
/// region), not bytes used by live objects: that is the memory the region
/// keeps away from everyone else.
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
    /// `region` started reporting to this listener; it currently holds
    /// `total` bytes of segments.
    fn add(&self, region: RegionId, total: usize);

    /// `region` stopped reporting to this listener (it was unlistened,
    /// dropped, or merged into a region with another listener); it held
    /// `total` bytes of segments at that moment.
    fn del(&self, region: RegionId, total: usize);

    /// `region` took `delta` more bytes of segments (at least one segment).
    fn increase_usage(&self, region: RegionId, delta: usize);

    /// `region` released `delta` bytes of segments (at least one segment).
    fn decrease_usage(&self, region: RegionId, delta: usize);

    /// `from`, which reported to this same listener, was merged into `into`:
    /// its `moved` bytes of segments now belong to `into`, and `from` will not
    /// report again. The listener's total is unchanged by a merge.
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
