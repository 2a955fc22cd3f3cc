//! [`SizeTrackedRegion`]: a logalloc region that reports to a group from
//! birth.

use std::fmt;
use std::ops::{Deref, DerefMut};

use logalloc::{Region, RegionId, RegionListener, SegmentPool};

use crate::group::RegionGroup;
use crate::sync::Arc;

/// A [`logalloc::Region`] registered in a [`RegionGroup`] through the
/// listener interface: the group hears of every segment the region takes or
/// releases and of every change of its handle table and slot lists, of its
/// merges and grounding, and of its end (drop, or `unlisten`), without
/// polling.
///
/// It dereferences to the [`Region`], so `alloc`, `free`,
/// `ground_evictable_occupancy`, `merge` and `stats` are called on it
/// directly. Dropping it drops the region, which reports `del` to the group.
pub struct SizeTrackedRegion {
    region: Region,
    group: Arc<RegionGroup>,
}

impl SizeTrackedRegion {
    /// Creates an empty region in `pool`, already listening to `group`.
    pub fn new(group: &Arc<RegionGroup>, pool: &Arc<SegmentPool>) -> SizeTrackedRegion {
        let mut region = Region::new(pool);
        let listener: Arc<dyn RegionListener> = group.clone();
        region.listen(listener);
        SizeTrackedRegion {
            region,
            group: group.clone(),
        }
    }

    /// The region's id, as the group reports it (for example from
    /// [`RegionGroup::largest_region`]).
    pub fn id(&self) -> RegionId {
        self.region.id()
    }

    /// The group this region was created in.
    pub fn group(&self) -> &Arc<RegionGroup> {
        &self.group
    }

    /// The underlying region, still reporting to the group (for example to
    /// [`merge`](Region::merge) it into another region).
    pub fn into_region(self) -> Region {
        self.region
    }
}

impl Deref for SizeTrackedRegion {
    type Target = Region;
    fn deref(&self) -> &Region {
        &self.region
    }
}

impl DerefMut for SizeTrackedRegion {
    fn deref_mut(&mut self) -> &mut Region {
        &mut self.region
    }
}

impl fmt::Debug for SizeTrackedRegion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SizeTrackedRegion")
            .field("id", &self.region.id())
            .field("group", &self.group.name())
            .finish()
    }
}
