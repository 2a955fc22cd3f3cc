//! Batch access under one acquisition of a region's lock: the read view
//! ([`RegionReader`]) and the write guard ([`RegionWriter`]).

use std::fmt;

use super::Region;
use super::allocation::alloc_locked;
use super::inner::RegionInner;
use crate::managed::{INDEX_ENTRY_LEN, ManagedBytes, ManagedRef};
use crate::pool::SegmentPool;
use crate::stats::RegionStats;
use crate::sync::{RwLockReadGuard, RwLockWriteGuard};
use crate::{Error, Handle};

/// The bytes of the live object `handle` of a region whose lock the caller
/// holds (shared or exclusive) for at least `'a`.
#[inline]
fn object_bytes<'a>(
    pool: &'a SegmentPool,
    inner: &'a RegionInner,
    handle: Handle,
) -> Result<&'a [u8], Error> {
    let at = inner.table.lookup(handle)?;
    // SAFETY: `at` is a live entry of this region's table, so the object is
    // in a segment the region owns, inside its bounds (see `Region::get`).
    // `inner` borrows a lock guard for `'a`, so no writer (the owner's
    // `&mut` methods, other regions' reclaim) can move, overwrite or free
    // the bytes while the slice lives; a `RegionWriter` hands out this slice
    // only through `&self`, which excludes its own `&mut` methods.
    Ok(unsafe { pool.memory().object(at) })
}

/// Shared access to many objects of a region under one acquisition of its
/// lock; see [`Region::reader`].
///
/// While it lives, reclaim on behalf of other regions skips this region,
/// exactly as while an [`ObjectRef`](super::ObjectRef) lives. Every slice it hands out borrows
/// the reader, so none can outlive the lock.
pub struct RegionReader<'a> {
    pub(super) guard: RwLockReadGuard<'a, RegionInner>,
    pub(super) pool: &'a SegmentPool,
}

impl fmt::Debug for RegionReader<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegionReader")
            .field("region", &self.guard.id)
            .finish_non_exhaustive()
    }
}

impl RegionReader<'_> {
    /// The bytes of an object. Errors: [`Error::StaleHandle`],
    /// [`Error::ForeignHandle`].
    #[inline]
    pub fn get(&self, handle: Handle) -> Result<&[u8], Error> {
        object_bytes(self.pool, &self.guard, handle)
    }

    fn max_object_size(&self) -> usize {
        self.pool.max_object_size()
    }

    /// A snapshot of the region's statistics (under the lock already held).
    pub fn stats(&self) -> RegionStats {
        self.guard.stats()
    }

    /// The chunks of a [`ManagedBytes`] string, comparable without copying.
    pub fn managed(&self, bytes: ManagedBytes) -> Result<ManagedRef<'_>, Error> {
        ManagedRef::resolve(bytes, self.max_object_size(), |h| self.get(h))
    }
}

/// Exclusive access to a region under one acquisition of its lock: many
/// allocations, frees and in-place writes without re-locking; see
/// [`Region::writer`].
pub struct RegionWriter<'a> {
    pub(super) guard: RwLockWriteGuard<'a, RegionInner>,
    pub(super) region: &'a Region,
}

impl fmt::Debug for RegionWriter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegionWriter")
            .field("region", &self.guard.id)
            .finish_non_exhaustive()
    }
}

impl RegionWriter<'_> {
    /// As [`Region::alloc_with`]: allocates and initialises an object in
    /// place.
    #[inline]
    pub fn alloc_with(
        &mut self,
        size: usize,
        align: usize,
        init: impl FnOnce(&mut [u8]),
    ) -> Result<Handle, Error> {
        let (size, align) = self.region.validate(size, align)?;
        alloc_locked(&self.region.pool, &mut self.guard, size, align, init)
    }

    /// As [`Region::alloc_bytes`].
    #[inline]
    pub fn alloc_bytes(&mut self, data: &[u8]) -> Result<Handle, Error> {
        self.alloc_with(data.len(), 1, |bytes| bytes.copy_from_slice(data))
    }

    /// As [`Region::free`].
    #[inline]
    pub fn free(&mut self, handle: Handle) -> Result<(), Error> {
        self.guard.free(&self.region.pool, handle).map(|_| ())
    }

    /// The bytes of an object.
    #[inline]
    pub fn get(&self, handle: Handle) -> Result<&[u8], Error> {
        object_bytes(&self.region.pool, &self.guard, handle)
    }

    /// The bytes of an object, mutably.
    #[inline]
    pub fn get_mut(&mut self, handle: Handle) -> Result<&mut [u8], Error> {
        let at = self.guard.table.lookup(handle)?;
        // SAFETY: as in `Region::get_mut`: a live entry inside a segment the
        // region owns, with the lock held exclusively by `self.guard` for as
        // long as the returned slice borrows `self` mutably, so no other
        // reference into the region's segments exists.
        Ok(unsafe { self.region.pool.memory().object_mut(at) })
    }

    /// Stores `data` as a [`ManagedBytes`] string: one object if it fits the
    /// largest object, otherwise chunks of the largest object size plus an
    /// index object of their handles. All or nothing: on error every chunk
    /// already allocated is freed again. Errors: those of allocation, and
    /// [`Error::ManagedTooLarge`] above
    /// [`ManagedBytes::max_len`]`(max object size)`.
    pub fn alloc_managed(&mut self, data: &[u8]) -> Result<ManagedBytes, Error> {
        let max = self.region.pool.max_object_size();
        if data.len() <= max {
            let head = self.alloc_bytes(data)?;
            return Ok(ManagedBytes::new(head, data.len()));
        }
        let limit = ManagedBytes::max_len(max);
        if data.len() > limit {
            return Err(Error::ManagedTooLarge {
                size: data.len(),
                max: limit,
            });
        }
        let mut chunks = Vec::with_capacity(data.len().div_ceil(max));
        for chunk in data.chunks(max) {
            match self.alloc_bytes(chunk) {
                Ok(h) => chunks.push(h),
                Err(e) => {
                    self.free_all(&chunks);
                    return Err(e);
                }
            }
        }
        let index = self.alloc_with(chunks.len() * INDEX_ENTRY_LEN, INDEX_ENTRY_LEN, |bytes| {
            for (slot, h) in bytes.chunks_exact_mut(INDEX_ENTRY_LEN).zip(&chunks) {
                slot.copy_from_slice(&h.to_raw().to_le_bytes());
            }
        });
        match index {
            Ok(head) => Ok(ManagedBytes::new(head, data.len())),
            Err(e) => {
                self.free_all(&chunks);
                Err(e)
            }
        }
    }

    fn free_all(&mut self, handles: &[Handle]) {
        for &h in handles {
            // Just allocated by us under this lock: cannot be stale.
            let freed = self.free(h);
            debug_assert!(freed.is_ok());
        }
    }

    /// Frees a [`ManagedBytes`] string (its chunks and index). Errors
    /// ([`Error::StaleHandle`], [`Error::ForeignHandle`]) free nothing.
    pub fn free_managed(&mut self, bytes: ManagedBytes) -> Result<(), Error> {
        if !bytes.is_chunked(self.region.pool.max_object_size()) {
            return self.free(bytes.head());
        }
        let chunks: Vec<Handle> = ManagedRef::index_handles(self.get(bytes.head())?)?;
        for &h in &chunks {
            self.guard.table.lookup(h)?;
        }
        self.free_all(&chunks);
        self.free(bytes.head())
    }

    fn max_object_size(&self) -> usize {
        self.region.pool.max_object_size()
    }

    /// The chunks of a [`ManagedBytes`] string.
    pub fn managed(&self, bytes: ManagedBytes) -> Result<ManagedRef<'_>, Error> {
        ManagedRef::resolve(bytes, self.max_object_size(), |h| self.get(h))
    }

    /// Every object of a [`ManagedBytes`] string: its head, then its
    /// chunks if it is chunked. For a string whose objects change hands
    /// by [`merge`](Region::merge) and are freed one by one by their new
    /// owner (freeing them all frees the string, as
    /// [`free_managed`](Self::free_managed) does).
    ///
    /// # Errors
    /// A stale or foreign head, or a malformed chunk index.
    pub fn managed_handles(&self, bytes: ManagedBytes) -> Result<Vec<Handle>, Error> {
        let mut out = vec![bytes.head()];
        if bytes.is_chunked(self.max_object_size()) {
            out.extend(ManagedRef::index_handles(self.get(bytes.head())?)?);
        }
        Ok(out)
    }

    /// A snapshot of the region's statistics.
    pub fn stats(&self) -> RegionStats {
        self.guard.stats()
    }
}
