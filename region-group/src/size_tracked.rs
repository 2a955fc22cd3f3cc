//! [`SizeTrackedRegion`]: a logalloc region that reports to a group from
//! birth.

use std::fmt;
use std::ops::Deref;

use logalloc::{
    Eviction, Evictor, Handle, ObjectMut, Region, RegionId, RegionListener, RegionWriter,
    SegmentPool,
};

use crate::group::{RegionGroup, Shared};
use crate::sync::{Arc, PlainArc};

/// A [`logalloc::Region`] registered in a [`RegionGroup`] through the
/// listener interface: the group hears of every segment the region takes or
/// releases and of every change of its handle table and slot lists, of its
/// merges and grounding, and of its end (drop, or `unlisten`), without
/// polling.
///
/// It dereferences to `&`[`Region`], so `get`, `stats` and
/// [`ground_evictable_occupancy`](Region::ground_evictable_occupancy) are
/// called on it directly; the changing operations (`alloc`, `free`,
/// `get_mut`, `compact`, `merge`, eviction) are its own methods, which
/// forward to the region. There is no `&mut Region` access: the region
/// cannot `listen` elsewhere or `unlisten` and silently leave its group.
/// Dropping it drops the region, which reports `del` to the group;
/// [`into_region`](SizeTrackedRegion::into_region) hands the region over,
/// still reporting to the group.
///
/// ```compile_fail
/// # use region_group::{ReclaimConfig, RegionGroup, SizeTrackedRegion};
/// # use logalloc::{PoolConfig, SegmentPool};
/// let pool = SegmentPool::new(PoolConfig::default()).unwrap();
/// let group = RegionGroup::new("g", ReclaimConfig::default());
/// let mut tracked = SizeTrackedRegion::new(&group, &pool);
/// tracked.unlisten(); // no `&mut Region` access: does not compile
/// ```
pub struct SizeTrackedRegion {
    region: Region,
    /// The group's shared part, for its name.
    group: Arc<Shared>,
}

impl SizeTrackedRegion {
    /// Creates an empty region in `pool`, already listening to `group`.
    pub fn new<O: ?Sized + Send + Sync + 'static>(
        group: &PlainArc<RegionGroup<O>>,
        pool: &PlainArc<SegmentPool>,
    ) -> SizeTrackedRegion {
        let mut region = Region::new(pool);
        let listener: PlainArc<dyn RegionListener> = group.clone();
        region.listen(listener);
        SizeTrackedRegion {
            region,
            group: Arc::clone(&group.shared),
        }
    }

    /// The region's id, as the group reports it (for example from
    /// [`RegionGroup::largest_region`]).
    pub fn id(&self) -> RegionId {
        self.region.id()
    }

    /// The name of the group this region was created in.
    pub fn group_name(&self) -> &str {
        self.group.name()
    }

    /// The underlying region, still reporting to the group (for example to
    /// [`merge`](Region::merge) it into another region).
    pub fn into_region(self) -> Region {
        self.region
    }

    /// [`Region::alloc`]: a zero-filled object of `size` bytes aligned to
    /// `align`.
    ///
    /// # Errors
    ///
    /// As [`Region::alloc`]; on error nothing was allocated.
    pub fn alloc(&mut self, size: usize, align: usize) -> Result<Handle, logalloc::Error> {
        self.region.alloc(size, align)
    }

    /// [`Region::alloc_bytes`]: a copy of `data`.
    ///
    /// # Errors
    ///
    /// As [`Region::alloc`]; on error nothing was allocated.
    pub fn alloc_bytes(&mut self, data: &[u8]) -> Result<Handle, logalloc::Error> {
        self.region.alloc_bytes(data)
    }

    /// [`Region::free`]: frees an object.
    ///
    /// # Errors
    ///
    /// A stale or foreign handle; nothing is freed then.
    pub fn free(&mut self, handle: Handle) -> Result<(), logalloc::Error> {
        self.region.free(handle)
    }

    /// [`Region::get_mut`]: the bytes of an object, mutably.
    ///
    /// # Errors
    ///
    /// A stale or foreign handle.
    pub fn get_mut(&mut self, handle: Handle) -> Result<ObjectMut<'_>, logalloc::Error> {
        self.region.get_mut(handle)
    }

    /// [`Region::compact`]: compacts the sparsest closed segments; returns
    /// how many segments were released.
    pub fn compact(&mut self) -> usize {
        self.region.compact()
    }

    /// [`Region::full_compaction`]: moves every live object.
    ///
    /// # Errors
    ///
    /// [`logalloc::Error::CompactionOutOfMemory`] when no destination segment can be
    /// had; every object is intact either way.
    pub fn full_compaction(&mut self) -> Result<(), logalloc::Error> {
        self.region.full_compaction()
    }

    /// [`Region::set_eviction_fn`]: makes the region evictable.
    pub fn set_eviction_fn(
        &mut self,
        evict: impl FnMut(&mut Evictor<'_>) -> Eviction + Send + Sync + 'static,
    ) {
        self.region.set_eviction_fn(evict);
    }

    /// [`Region::clear_eviction_fn`]: makes the region non-evictable again.
    pub fn clear_eviction_fn(&mut self) {
        self.region.clear_eviction_fn();
    }

    /// [`Region::writer`]: takes the region's lock once for many
    /// allocations, frees and in-place writes, all reported to the group as
    /// they happen. The writer cannot `listen` or `unlisten`.
    pub fn writer(&mut self) -> RegionWriter<'_> {
        self.region.writer()
    }

    /// Leaves the group on purpose: the group hears `del` (it stops counting
    /// the region, as when the region is dropped) and nothing more. The
    /// region stays usable and keeps its objects; a memtable calls this when
    /// its flush is committed but readers still hold it, so the group's
    /// figure drops at once. Idempotent. This is the only way out of the
    /// group short of dropping the region: there is no `&mut Region` access
    /// through which to `unlisten` silently.
    pub fn leave_group(&mut self) {
        self.region.unlisten();
    }

    /// [`Region::merge`]: moves all of `other`'s segments and objects into
    /// this region, without copying; the group hears `merged` if `other`
    /// reported to it too.
    ///
    /// # Errors
    ///
    /// [`logalloc::Error::PoolMismatch`] if the regions belong to different pools.
    pub fn merge(&mut self, other: Region) -> Result<(), logalloc::Error> {
        self.region.merge(other)
    }
}

impl Deref for SizeTrackedRegion {
    type Target = Region;
    fn deref(&self) -> &Region {
        &self.region
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
