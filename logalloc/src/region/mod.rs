//! Regions: bump allocation into segments, free, compaction, reclaim,
//! eviction and merge.
//!
//! # Segment layout
//!
//! Segments hold nothing but object bytes, each object at the next offset
//! that satisfies its alignment (at least one byte each, so every object has
//! a distinct place and starts inside its segment). Where an object is, its
//! size, alignment and generation live in its handle-table entry; in a pool
//! too large for sizes in the entries, the size is in a 2- or 4-byte header
//! just in front of the object instead (`Geometry::header_bytes`), which
//! `get`, `free` and compaction read.
//!
//! Each segment also has a *slot list*: the handle-table slots of the
//! objects appended to it, in order. Compaction walks that list rather than
//! the segment: a slot whose entry is live and points into the segment is a
//! live object to move; anything else (a freed object, or a slot that was
//! freed and reused elsewhere) is skipped. Because the slots are known up
//! front, compaction can prefetch their scattered table entries, and `free`
//! touches segment memory only to read a size header. The list costs 4
//! bytes per object appended, counted with the handle table; it is dropped
//! when the segment is emptied.
//!
//! # Locking
//!
//! A region's state sits behind a reader-writer lock shared with the pool's
//! registry. The owner's `&mut self` operations take it exclusively; `get`
//! takes it shared and the returned guard keeps it so for as long as the
//! bytes are borrowed. Reclaim on behalf of another region only ever uses
//! `try_write`, so it skips a region that is borrowed or busy and can never
//! deadlock with its owner. See the crate documentation for the argument.

/// Allocation (bump allocation into the active segment) and free.
mod allocation;
/// [`RegionReader`] and [`RegionWriter`]: many operations under one
/// acquisition of the lock.
mod batch;
/// Moving the live objects of sparse segments so whole segments go back.
mod compaction;
/// [`RegionInner`], the state behind the lock, and the segment bookkeeping
/// every operation shares.
mod inner;
/// The invariant checker behind [`Region::check_invariants`].
mod invariants;
/// Taking over another region's segments and handles.
mod merge;
/// What an allocation does when the pool is dry: compaction of any
/// unborrowed region, eviction, forced compaction.
mod reclaim;

use std::fmt;
use std::ops::{Deref, DerefMut};

pub use self::batch::{RegionReader, RegionWriter};
pub use self::reclaim::{Eviction, Evictor};

use self::allocation::alloc_locked;
use self::inner::RegionInner;
use crate::config::{MAX_ALIGN, MAX_ALIGN_SEGMENT_DIVISOR};
use crate::pool::SegmentPool;
use crate::stats::RegionStats;
use crate::sync::{Arc, AtomicBool, Ordering, PlainArc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use crate::{Error, Handle, RegionId, RegionListener};

/// The region state shared with the pool's registry.
#[derive(Debug)]
pub(crate) struct RegionShared {
    pub(crate) id: RegionId,
    pub(crate) inner: RwLock<RegionInner>,
    /// Whether the region has an eviction callback, readable without its
    /// lock: another region's allocation that finds the pool dry waits for
    /// a busy evictable region (see `find_room_slow`), never for others.
    pub(crate) evictable: AtomicBool,
}

/// A region: a set of segments that objects are bump-allocated into.
///
/// See the [crate documentation](crate) for the design. All methods that
/// change the region take `&mut self`; [`get`](Self::get) takes `&self` and
/// returns a guard that keeps the region from being compacted by other
/// regions' reclaim while the bytes are borrowed.
pub struct Region {
    pool: PlainArc<SegmentPool>,
    shared: Arc<RegionShared>,
    key: usize,
}

impl fmt::Debug for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Region")
            .field("id", &self.shared.id)
            .finish_non_exhaustive()
    }
}

/// Shared access to an object's bytes; see [`Region::get`].
///
/// Holds the region's lock in shared mode: reclaim on behalf of other
/// regions skips this region until the guard is dropped.
///
/// The guard borrows the [`Region`], so the borrow checker rules out
/// everything that could move, overwrite or free the bytes while it lives:
/// it cannot outlive the region,
///
/// ```compile_fail
/// # use logalloc::{PoolConfig, Region, SegmentPool};
/// # let pool = SegmentPool::new(PoolConfig::default().with_memory_limit(4 << 20)).unwrap();
/// let mut region = Region::new(&pool);
/// let h = region.alloc_bytes(b"x").unwrap();
/// let bytes = region.get(h).unwrap();
/// drop(region); // error: `region` is still borrowed by `bytes`
/// assert_eq!(&*bytes, b"x");
/// ```
///
/// nor coexist with [`Region::get_mut`] (or any other `&mut` method:
/// `free`, `compact`, `full_compaction`, allocation),
///
/// ```compile_fail
/// # use logalloc::{PoolConfig, Region, SegmentPool};
/// # let pool = SegmentPool::new(PoolConfig::default().with_memory_limit(4 << 20)).unwrap();
/// let mut region = Region::new(&pool);
/// let h = region.alloc_bytes(b"x").unwrap();
/// let seen = region.get(h).unwrap();
/// region.get_mut(h).unwrap()[0] = b'y'; // error: `region` is borrowed
/// assert_eq!(&*seen, b"x");
/// ```
///
/// nor with a [`Region::merge`] of its region into another:
///
/// ```compile_fail
/// # use logalloc::{PoolConfig, Region, SegmentPool};
/// # let pool = SegmentPool::new(PoolConfig::default().with_memory_limit(4 << 20)).unwrap();
/// let mut into = Region::new(&pool);
/// let mut region = Region::new(&pool);
/// let h = region.alloc_bytes(b"x").unwrap();
/// let seen = region.get(h).unwrap();
/// into.merge(region).unwrap(); // error: `region` is moved while borrowed
/// assert_eq!(&*seen, b"x");
/// ```
pub struct ObjectRef<'a> {
    _guard: RwLockReadGuard<'a, RegionInner>,
    bytes: &'a [u8],
}

impl fmt::Debug for ObjectRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ObjectRef").field(&self.bytes).finish()
    }
}

impl Deref for ObjectRef<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.bytes
    }
}

/// Exclusive access to an object's bytes; see [`Region::get_mut`].
pub struct ObjectMut<'a> {
    _guard: RwLockWriteGuard<'a, RegionInner>,
    bytes: &'a mut [u8],
}

impl fmt::Debug for ObjectMut<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ObjectMut").field(&self.bytes).finish()
    }
}

impl Deref for ObjectMut<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.bytes
    }
}

impl DerefMut for ObjectMut<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        self.bytes
    }
}

impl Region {
    /// Creates an empty region in `pool`. It takes no segment until its
    /// first allocation.
    pub fn new(pool: &PlainArc<SegmentPool>) -> Region {
        let id = pool.next_region_id();
        let shared = Arc::new(RegionShared {
            id,
            inner: RwLock::new(RegionInner::new(id, pool)),
            evictable: AtomicBool::new(false),
        });
        let key = pool.register(shared.clone());
        Region {
            pool: pool.clone(),
            shared,
            key,
        }
    }

    /// This region's pool-unique id.
    pub fn id(&self) -> RegionId {
        self.shared.id
    }

    /// The pool this region takes segments from.
    pub fn pool(&self) -> &PlainArc<SegmentPool> {
        &self.pool
    }

    #[inline]
    fn validate(&self, size: usize, align: usize) -> Result<(u32, u32), Error> {
        let max_align = MAX_ALIGN.min(self.pool.segment_size() / MAX_ALIGN_SEGMENT_DIVISOR);
        if !align.is_power_of_two() || align > max_align {
            return Err(Error::InvalidAlignment {
                align,
                max: max_align,
            });
        }
        let max = self.pool.max_object_size();
        if size > max {
            return Err(Error::ObjectTooLarge { size, max });
        }
        // Both fit: size <= 10% of a segment <= 6.4 MiB, align <= 4096.
        Ok((size as u32, align as u32))
    }

    /// Allocates an object of `size` bytes aligned to `align` and lets
    /// `init` write its bytes in place, under one exclusive lock (no
    /// zero-fill, no second lookup through [`get_mut`](Self::get_mut)).
    /// `init` must not touch this region (it cannot: the region is
    /// borrowed mutably). Errors as for [`alloc`](Self::alloc); on error
    /// `init` was not called.
    #[inline]
    pub fn alloc_with(
        &mut self,
        size: usize,
        align: usize,
        init: impl FnOnce(&mut [u8]),
    ) -> Result<Handle, Error> {
        let (size, align) = self.validate(size, align)?;
        let mut inner = self.shared.inner.write();
        alloc_locked(&self.pool, &mut inner, size, align, init)
    }

    /// Allocates a zero-filled object of `size` bytes aligned to `align`
    /// (a power of two, at most 4096 and at most 1/8 of a segment).
    ///
    /// If the pool has no free segment, reclaims first (compaction of this
    /// or other unborrowed regions, then eviction). Errors:
    /// [`Error::ObjectTooLarge`] above 10% of a segment,
    /// [`Error::InvalidAlignment`], [`Error::OutOfMemory`] when nothing can
    /// be reclaimed, [`Error::InjectedFailure`]. On error nothing was
    /// allocated and every existing object is intact.
    pub fn alloc(&mut self, size: usize, align: usize) -> Result<Handle, Error> {
        self.alloc_with(size, align, |bytes| bytes.fill(0))
    }

    /// Allocates a copy of `data` (alignment 1). Errors as for [`alloc`](Self::alloc).
    #[inline]
    pub fn alloc_bytes(&mut self, data: &[u8]) -> Result<Handle, Error> {
        self.alloc_with(data.len(), 1, |bytes| bytes.copy_from_slice(data))
    }

    /// Frees an object. Errors ([`Error::StaleHandle`],
    /// [`Error::ForeignHandle`]) free nothing.
    #[inline]
    pub fn free(&mut self, handle: Handle) -> Result<(), Error> {
        self.shared
            .inner
            .write()
            .free(&self.pool, handle)
            .map(|_| ())
    }

    /// The bytes of an object.
    ///
    /// The guard holds the region's lock in shared mode: any number of
    /// guards can be alive at once, while reclaim for other regions skips
    /// this one.
    pub fn get(&self, handle: Handle) -> Result<ObjectRef<'_>, Error> {
        let guard = self.shared.inner.read();
        let at = guard.table.lookup(handle)?;
        // SAFETY: `at` is a live entry, so the object is in a segment this
        // region owns, with `offset + size <= segment size` (only `place` and
        // compaction write entries, and both check the segment's end), and a
        // segment is released only when no live entry points into it. A
        // handle this region did not issue still reaches only this region's
        // own entries. The guard moves into the returned value, so the region
        // stays read-locked while `bytes` is reachable: writers (the owner's
        // `&mut` methods, other regions' reclaim) are excluded, and the
        // segment memory lives as long as the pool, which `self` keeps alive.
        let bytes = unsafe { self.pool.memory().object(at) };
        Ok(ObjectRef {
            _guard: guard,
            bytes,
        })
    }

    /// The bytes of an object, mutably.
    pub fn get_mut(&mut self, handle: Handle) -> Result<ObjectMut<'_>, Error> {
        let guard = self.shared.inner.write();
        let at = guard.table.lookup(handle)?;
        // SAFETY: as in `get`, with the lock held exclusively by the guard
        // that moves into the returned value and `&mut self` ruling out any
        // other reference into this region's segments.
        let bytes = unsafe { self.pool.memory().object_mut(at) };
        Ok(ObjectMut {
            _guard: guard,
            bytes,
        })
    }

    /// Compacts the sparsest closed segments (those with at least the pool's
    /// [`compaction_min_free_percent`](crate::PoolConfig::compaction_min_free_percent)
    /// free, 15% by default)
    /// while the closed segments hold at least a segment's worth of free
    /// space. Returns how many segments were emptied and released.
    pub fn compact(&mut self) -> usize {
        self.shared.inner.write().compact(&self.pool)
    }

    /// Moves every live object (for tests): closes the active segment and
    /// compacts every closed segment regardless of occupancy. Fails with
    /// [`Error::CompactionOutOfMemory`] if no destination segment can be had;
    /// every object is intact either way.
    pub fn full_compaction(&mut self) -> Result<(), Error> {
        self.shared.inner.write().full_compaction(&self.pool)
    }

    /// Incremented on every compaction or eviction of this region (also
    /// when run by another region's reclaim). If it has not changed, no
    /// object of the region has moved.
    pub fn reclaim_counter(&self) -> u64 {
        self.shared.inner.read().reclaim_counter
    }

    /// Makes the region evictable: when the pool is dry and compaction is
    /// not enough, reclaim calls `evict`, which should free some objects
    /// through the [`Evictor`] (in the caller's LRU order) and say whether
    /// it did. It runs on whichever thread needs memory, with this region
    /// locked: it must not touch this or any other region except through
    /// the `Evictor`, nor block on a lock held around region operations.
    pub fn set_eviction_fn(
        &mut self,
        evict: impl FnMut(&mut Evictor<'_>) -> Eviction + Send + Sync + 'static,
    ) {
        self.shared.inner.write().evictor = Some(Box::new(evict));
        self.shared.evictable.store(true, Ordering::Relaxed);
    }

    /// Makes the region non-evictable again.
    pub fn clear_eviction_fn(&mut self) {
        self.shared.inner.write().evictor = None;
        self.shared.evictable.store(false, Ordering::Relaxed);
    }

    /// Starts reporting usage to `listener` (replacing any previous one,
    /// which gets `del`); fires `add` with the current total at once, then
    /// `ground_evictable` if the region is grounded.
    pub fn listen(&mut self, listener: PlainArc<dyn RegionListener>) {
        self.shared.inner.write().listen(listener);
    }

    /// Stops reporting; the listener gets `del`. No-op without a listener.
    pub fn unlisten(&mut self) {
        self.shared.inner.write().unlisten();
    }

    /// Grounds the region's evictable occupancy (permanent); the listener
    /// gets `ground_evictable`, and so does every listener the region
    /// reports to later. Takes `&self`: it changes no object.
    pub fn ground_evictable_occupancy(&self) {
        let mut inner = self.shared.inner.write();
        inner.grounded = true;
        if let Some(listener) = &inner.listener {
            listener.ground_evictable(inner.id);
        }
    }

    /// Whether [`ground_evictable_occupancy`](Self::ground_evictable_occupancy) was called.
    pub fn is_grounded(&self) -> bool {
        self.shared.inner.read().grounded
    }

    /// Moves all of `other`'s segments and objects into this region without
    /// copying any object: every handle `other` issued is valid here. The
    /// listeners hear `merged` if both regions report to the same one,
    /// otherwise `del` (to `other`'s) and `increase_usage` (to this one's).
    /// This region keeps its own eviction callback and listener.
    ///
    /// Fails with [`Error::PoolMismatch`] (changing nothing; `other` is
    /// dropped as usual) if the regions belong to different pools.
    pub fn merge(&mut self, other: Region) -> Result<(), Error> {
        if !PlainArc::ptr_eq(&self.pool, &other.pool) {
            return Err(Error::PoolMismatch);
        }
        let mut mine = self.shared.inner.write();
        let mut theirs = other.shared.inner.write();
        mine.absorb(&self.pool, &mut theirs);
        Ok(())
    }

    /// A snapshot of the region's statistics.
    pub fn stats(&self) -> RegionStats {
        self.shared.inner.read().stats()
    }

    /// Recounts occupancy, objects and free space from the segments and the
    /// handle table and compares them with the region's counters; also
    /// checks the histogram, the segment map and the table's free lists.
    /// Linear in the region's size: for tests and debugging.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.shared.inner.read().check(self.pool.memory())
    }

    /// Takes the region's lock in shared mode once, for many
    /// [`get`](RegionReader::get)s; see [`RegionReader`].
    pub fn reader(&self) -> RegionReader<'_> {
        RegionReader {
            guard: self.shared.inner.read(),
            pool: &self.pool,
        }
    }

    /// Takes the region's lock exclusively once, for many allocations,
    /// frees and in-place writes; see [`RegionWriter`].
    pub fn writer(&mut self) -> RegionWriter<'_> {
        RegionWriter {
            guard: self.shared.inner.write(),
            region: self,
        }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        self.shared.inner.write().retire(&self.pool);
        self.pool.unregister(self.key);
    }
}

/// A pool of `segments` segments of 4 KiB, in chunks of 4, for the unit
/// tests of the region's modules.
#[cfg(all(test, not(loom)))]
fn test_pool(segments: usize) -> PlainArc<SegmentPool> {
    SegmentPool::new(
        crate::PoolConfig::default()
            .with_segment_size(4096)
            .with_memory_limit(segments * 4096)
            .with_bulk_segments(4),
    )
    .unwrap()
}
