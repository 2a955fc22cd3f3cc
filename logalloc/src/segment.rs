//! Raw segment memory: the one module that allocates and touches it.
//!
//! Segments are carved out of *chunks*: `bulk_segments` segments taken from
//! the system allocator in one `alloc_zeroed` call, aligned to the segment
//! size (so every segment is aligned to its size). A segment is named by its
//! index in the pool; `index >> bulk_shift` selects the chunk. A chunk's
//! address is published once, under the pool lock, before any of its
//! segments is handed out, and stays valid until the pool is dropped.
//!
//! In a pool whose handle-table entries have no size field
//! ([`Geometry::header_bytes`] != 0), the bytes in front of every object
//! hold its size (little-endian); [`SegmentMemory::object`] reads it.
//!
//! Memory is zeroed when it comes from the system and only ever overwritten
//! with initialised bytes afterwards, so every byte of every segment is
//! always initialised.
//!
//! The byte-access functions are `unsafe`: this module checks bounds (in
//! debug builds) but cannot know which region owns a segment. Callers (the
//! region code) guarantee that they own the segment and that the usual
//! aliasing rules hold, which the region lock provides.
#![allow(
    clippy::disallowed_methods,
    reason = "the one module allowed raw allocation and raw memory access (see clippy.toml)"
)]

use std::alloc::{self, Layout};
use std::marker::PhantomData;
use std::ptr;

use crate::config::Geometry;
use crate::sync::{AtomicPtr, Ordering};
use crate::table::{Location, SIZE_IN_HEADER};

/// The address space of one pool: a table of lazily allocated chunks.
#[derive(Debug)]
pub(crate) struct SegmentMemory {
    segment_shift: u32,
    bulk_shift: u32,
    max_segments: usize,
    /// Bytes of the size header in front of every object (0: sizes are in
    /// the handle-table entries).
    header_bytes: u32,
    chunks: Box<[AtomicPtr<u8>]>,
}

impl SegmentMemory {
    pub(crate) fn new(geometry: &Geometry) -> SegmentMemory {
        let per_chunk = 1usize << geometry.bulk_shift;
        let chunks = geometry.max_segments.div_ceil(per_chunk);
        SegmentMemory {
            segment_shift: geometry.segment_shift,
            bulk_shift: geometry.bulk_shift,
            max_segments: geometry.max_segments,
            header_bytes: geometry.header_bytes,
            chunks: (0..chunks)
                .map(|_| AtomicPtr::new(ptr::null_mut()))
                .collect(),
        }
    }

    /// The layout of chunk `chunk`: the last chunk may hold fewer segments.
    fn chunk_layout(&self, chunk: usize) -> Layout {
        let first = chunk << self.bulk_shift;
        let count = (1usize << self.bulk_shift).min(self.max_segments - first);
        let segment_size = 1usize << self.segment_shift;
        // Sizes fit: the memory limit is a usize and the alignment a power of two.
        Layout::from_size_align(count << self.segment_shift, segment_size)
            .expect("chunk layout is valid by construction")
    }

    /// Makes sure the chunk holding `segment` is allocated. Returns the bytes
    /// newly taken from the system (0 if it was already there), or `None` if
    /// the system allocator failed. Called with the pool lock held, so there
    /// is a single writer per chunk slot.
    pub(crate) fn ensure_chunk(&self, segment: u32) -> Option<usize> {
        let chunk = (segment as usize) >> self.bulk_shift;
        if !self.chunks[chunk].load(Ordering::Acquire).is_null() {
            return Some(0);
        }
        let layout = self.chunk_layout(chunk);
        // SAFETY: the layout has a non-zero size (at least one segment).
        let memory = unsafe { alloc::alloc_zeroed(layout) };
        if memory.is_null() {
            return None;
        }
        self.chunks[chunk].store(memory, Ordering::Release);
        Some(layout.size())
    }

    /// Allocates the chunks holding the first `bytes` bytes (every chunk
    /// for `bytes` at or above the limit) and writes a zero to every page
    /// of them, so that no later access to them faults
    /// ([`crate::PoolConfig::prefault`]). Returns the bytes taken, or
    /// `None` if the system allocator failed (the chunks taken so far stay,
    /// freed with the pool). Called before the pool is shared, so nothing
    /// else touches the memory.
    pub(crate) fn prefault(&self, bytes: usize) -> Option<usize> {
        const PAGE: usize = 4096;
        let chunk_bytes = (1usize << self.bulk_shift) << self.segment_shift;
        let chunks = bytes.div_ceil(chunk_bytes).min(self.chunks.len());
        let mut taken_bytes = 0;
        for chunk in 0..chunks {
            let taken = self.ensure_chunk((chunk << self.bulk_shift) as u32)?;
            let size = self.chunk_layout(chunk).size();
            debug_assert_eq!(taken, size);
            let memory = self.chunks[chunk].load(Ordering::Acquire);
            for offset in (0..size).step_by(PAGE) {
                // SAFETY: `memory` is the start of this chunk's live
                // allocation of `size` bytes (just made by `ensure_chunk`),
                // and `offset < size`, so the write is in bounds. The pool
                // is not shared yet, so no reference to these bytes exists
                // and nothing else accesses them; the memory is zeroed and
                // stays so (a zero is written), keeping every byte
                // initialised.
                unsafe { ptr::write_volatile(memory.add(offset), 0) };
            }
            taken_bytes += taken;
        }
        Some(taken_bytes)
    }

    /// The address of segment `segment`, whose chunk must be allocated.
    #[inline]
    fn segment_ptr(&self, segment: u32) -> *mut u8 {
        let segment = segment as usize;
        let chunk = self.chunks[segment >> self.bulk_shift].load(Ordering::Acquire);
        debug_assert!(!chunk.is_null(), "segment {segment} used before its chunk");
        let within = (segment & ((1 << self.bulk_shift) - 1)) << self.segment_shift;
        chunk.wrapping_add(within)
    }

    #[inline]
    fn check(&self, segment: u32, offset: usize, len: usize) {
        debug_assert!((segment as usize) < self.max_segments);
        debug_assert!(offset + len <= 1 << self.segment_shift);
    }

    /// The `len` bytes at `offset` in `segment`.
    ///
    /// # Safety
    ///
    /// `segment` was handed out by this pool (so its chunk is allocated) and
    /// is owned by the caller's region, which stays locked (shared or
    /// exclusive) while the returned slice lives; `offset + len` is at most
    /// the segment size (checked in debug builds only); and nothing writes
    /// these bytes meanwhile.
    ///
    /// Only the tests read raw ranges: the region reads objects through
    /// [`object`](Self::object), which knows where their sizes are.
    #[cfg(test)]
    pub(crate) unsafe fn bytes(&self, segment: u32, offset: usize, len: usize) -> &[u8] {
        self.check(segment, offset, len);
        // SAFETY: the caller guarantees that the chunk is allocated and
        // `offset + len <= segment size`, so the range lies inside one
        // allocation (`segment_ptr` is the segment's first byte); every byte
        // of a chunk is initialised (zeroed, then only overwritten with
        // initialised bytes); the memory lives as long as `self`; the caller
        // guarantees no writer while the slice lives.
        unsafe { std::slice::from_raw_parts(self.segment_ptr(segment).add(offset), len) }
    }

    /// The `len` bytes at `offset` in `segment`, mutably.
    ///
    /// # Safety
    ///
    /// `segment` was handed out by this pool (so its chunk is allocated) and
    /// is owned by the caller's region, which stays locked exclusively while
    /// the returned slice lives; `offset + len` is at most the segment size
    /// (checked in debug builds only); and no other reference to these bytes
    /// exists while the returned slice lives.
    #[inline]
    #[expect(
        clippy::mut_from_ref,
        reason = "segment memory is shared raw memory; exclusivity is the caller's contract"
    )]
    pub(crate) unsafe fn bytes_mut(&self, segment: u32, offset: usize, len: usize) -> &mut [u8] {
        self.check(segment, offset, len);
        // SAFETY: the caller guarantees that the chunk is allocated and
        // `offset + len <= segment size`, so the range lies inside one
        // allocation (`segment_ptr` is the segment's first byte); every byte
        // of a chunk is initialised (zeroed, then only overwritten with
        // initialised bytes); the memory lives as long as `self`; the caller
        // guarantees exclusivity while the slice lives.
        unsafe { std::slice::from_raw_parts_mut(self.segment_ptr(segment).add(offset), len) }
    }

    /// The size of the live object at `at`: `at.size` if entries hold
    /// sizes, else (`at.size` is [`SIZE_IN_HEADER`]) the object's header.
    ///
    /// # Safety
    ///
    /// `at` is the location of a live object of the caller's region (its
    /// segment was handed out by this pool and its header, if any, was
    /// written by the allocation), which stays locked (shared or exclusive)
    /// for the call, so nothing writes the header meanwhile.
    #[inline]
    pub(crate) unsafe fn object_size(&self, at: Location) -> u32 {
        if at.size != SIZE_IN_HEADER {
            return at.size;
        }
        self.check(at.segment, at.offset as usize, 0);
        // SAFETY: the caller guarantees a live object of a locked region, so
        // its chunk is allocated and `offset` is inside its segment.
        let start = unsafe { self.segment_ptr(at.segment).add(at.offset as usize) };
        // SAFETY: as above: the header of a live object, not being written.
        unsafe { self.header_before(start) }
    }

    /// The size held in the header that ends at `start`.
    ///
    /// # Safety
    ///
    /// `header_bytes` is not 0 and `start` is the first byte of a live
    /// object (of a locked region) in this pool's memory, whose header
    /// nothing writes meanwhile.
    #[inline]
    unsafe fn header_before(&self, start: *const u8) -> u32 {
        let header = self.header_bytes as usize;
        debug_assert_ne!(header, 0);
        // SAFETY: `place` and compaction put every object at least `header`
        // bytes into its segment and write its header in the `header` bytes
        // before it (the pool's geometry makes `header` 2 or 4), so the read
        // is inside the segment's chunk; every byte is initialised and the
        // caller guarantees no writer. Unaligned reads: headers have no
        // alignment.
        unsafe {
            let at = start.sub(header);
            if header == 2 {
                u32::from(u16::from_le(ptr::read_unaligned(at.cast::<u16>())))
            } else {
                u32::from_le(ptr::read_unaligned(at.cast::<u32>()))
            }
        }
    }

    /// The bytes of the live object at `at` (its size from the entry or
    /// from its header, as for [`object_size`](Self::object_size)).
    ///
    /// # Safety
    ///
    /// As for [`object_size`](Self::object_size), with the region staying
    /// locked while the slice lives and nothing writing the object
    /// meanwhile.
    #[inline]
    pub(crate) unsafe fn object(&self, at: Location) -> &[u8] {
        // SAFETY: the caller's guarantee (see `# Safety`).
        let (start, size) = unsafe { self.object_start(at) };
        // SAFETY: the caller guarantees a live object of a locked region, so
        // `start` is its first byte in an allocated chunk and it ends within
        // its segment (`place` and compaction check); every byte is
        // initialised, the memory lives as long as `self`, and the caller
        // guarantees no writer while the slice lives.
        unsafe { std::slice::from_raw_parts(start, size) }
    }

    /// The bytes of the live object at `at`, mutably.
    ///
    /// # Safety
    ///
    /// As for [`object`](Self::object) and [`bytes_mut`](Self::bytes_mut):
    /// the region is locked exclusively and no other reference to the
    /// object exists while the returned slice lives.
    #[inline]
    #[expect(
        clippy::mut_from_ref,
        reason = "segment memory is shared raw memory; exclusivity is the caller's contract"
    )]
    pub(crate) unsafe fn object_mut(&self, at: Location) -> &mut [u8] {
        // SAFETY: the caller's guarantee (see `# Safety`).
        let (start, size) = unsafe { self.object_start(at) };
        // SAFETY: as in `object`, plus exclusivity guaranteed by the caller.
        unsafe { std::slice::from_raw_parts_mut(start, size) }
    }

    /// The first byte and the size of the object at `at`, with one segment
    /// lookup for both.
    ///
    /// # Safety
    ///
    /// As for [`object_size`](Self::object_size).
    #[inline]
    unsafe fn object_start(&self, at: Location) -> (*mut u8, usize) {
        // SAFETY: the caller guarantees a live object, so its chunk is
        // allocated and `offset` is inside its segment.
        let start = unsafe { self.segment_ptr(at.segment).add(at.offset as usize) };
        // A compare of a value in a register: pools with sizes in their
        // entries (every pool up to 8 GiB of 128 KiB segments) load nothing
        // more than before.
        let size = if at.size == SIZE_IN_HEADER {
            // SAFETY: the caller guarantees that `at` is a live object of
            // a locked region of this pool, so `start` is its first byte.
            unsafe { self.header_before(start) }
        } else {
            at.size
        };
        self.check(at.segment, at.offset as usize, size as usize);
        (start, size as usize)
    }

    /// The pair of segments compaction moves objects between, from
    /// `source` to `target`, with both addresses looked up once rather than
    /// once per object. Both chunks must be allocated. Making the pair is
    /// safe; copying through it is [`SegmentPair::copy`], which is not.
    ///
    /// # Panics
    ///
    /// If `source` and `target` are the same segment: the pair's copies
    /// rely on the two never overlapping.
    #[inline]
    pub(crate) fn pair(&self, source: u32, target: u32) -> SegmentPair<'_> {
        assert_ne!(
            source, target,
            "objects move between two different segments"
        );
        debug_assert!((source as usize) < self.max_segments);
        debug_assert!((target as usize) < self.max_segments);
        SegmentPair {
            source: self.segment_ptr(source),
            target: self.segment_ptr(target),
            segment_size: 1 << self.segment_shift,
            memory: PhantomData,
        }
    }
}

/// Two different segments of one pool that objects are copied between (see
/// [`SegmentMemory::pair`]): compaction's one raw copy. It borrows the
/// memory, so it cannot outlive the chunks its addresses point into.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SegmentPair<'a> {
    /// The first byte of the segment objects are copied from.
    source: *const u8,
    /// The first byte of the segment objects are copied to.
    target: *mut u8,
    segment_size: usize,
    memory: PhantomData<&'a SegmentMemory>,
}

impl SegmentPair<'_> {
    /// Copies the `len` bytes at `source_offset` in the source segment to
    /// `target_offset` in the target segment.
    ///
    /// # Safety
    ///
    /// Both segments were handed out by the pool whose memory made this
    /// pair and are owned by the caller's region, which stays locked
    /// exclusively for the copy, so no reference to either range exists;
    /// `source_offset + len` and `target_offset + len` are at most the
    /// segment size (checked in debug builds only).
    #[inline]
    pub(crate) unsafe fn copy(&self, source_offset: usize, target_offset: usize, len: usize) {
        debug_assert!(source_offset + len <= self.segment_size);
        debug_assert!(target_offset + len <= self.segment_size);
        // SAFETY: `source` and `target` are the first bytes of two different
        // segments (`pair` refuses one segment twice) whose chunks are
        // allocated and outlive `self` (it borrows their memory), and the
        // caller guarantees that both ranges end within their segment, so
        // each lies inside one live allocation and the two cannot overlap
        // (segments are disjoint). Every byte of a chunk is
        // initialised, and the caller's exclusive lock rules out any other
        // reference to either range while the bytes are copied.
        unsafe {
            ptr::copy_nonoverlapping(
                self.source.add(source_offset),
                self.target.add(target_offset),
                len,
            );
        }
    }
}

/// Asks the CPU to bring `value` into the cache ahead of use. A hint: it
/// never faults and has no effect on the program's semantics.
#[inline]
pub(crate) fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` needs SSE, which every x86_64 CPU has; a
    // prefetch does not access memory architecturally (it cannot fault), and
    // the pointer comes from a live reference anyway.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(value).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

impl Drop for SegmentMemory {
    fn drop(&mut self) {
        for chunk in 0..self.chunks.len() {
            let memory = self.chunks[chunk].load(Ordering::Acquire);
            if !memory.is_null() {
                let layout = self.chunk_layout(chunk);
                // SAFETY: `memory` came from `alloc_zeroed(layout)` with this
                // same layout. The pool (our owner) is being dropped, so no
                // region is left: every `Region` holds an `Arc` of the pool,
                // and every reference into segment memory borrows a `Region`
                // (or, in an eviction callback, a region's lock taken through
                // one), so none can outlive this drop.
                unsafe { alloc::dealloc(memory, layout) };
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::PoolConfig;

    #[test]
    fn chunks_are_aligned_zeroed_and_addressable() {
        let config = PoolConfig::default()
            .with_segment_size(4096)
            .with_memory_limit(5 * 4096)
            .with_bulk_segments(2);
        let geometry = Geometry::new(&config).unwrap();
        let memory = SegmentMemory::new(&geometry);
        assert_eq!(memory.chunks.len(), 3);
        assert_eq!(
            memory.ensure_chunk(4),
            Some(4096),
            "last chunk holds one segment"
        );
        assert_eq!(memory.ensure_chunk(4), Some(0));
        assert_eq!(memory.ensure_chunk(1), Some(8192));
        for segment in [0, 1, 4] {
            assert_eq!(memory.segment_ptr(segment) as usize % 4096, 0);
            // SAFETY: the chunk is allocated; nothing else uses the memory.
            unsafe {
                assert_eq!(memory.bytes(segment, 4092, 4), &[0; 4]);
                memory.bytes_mut(segment, 4092, 4).copy_from_slice(&[7; 4]);
            }
        }
        // SAFETY: both chunks are allocated, both ranges are inside their
        // segments, and nothing else uses the memory.
        unsafe {
            memory.pair(4, 1).copy(4092, 0, 4);
            assert_eq!(memory.bytes(1, 0, 4), &[7; 4]);
            assert_eq!(memory.bytes(1, 4, 4), &[0; 4]);
        }
        prefetch(&memory);
    }

    #[test]
    fn prefault_takes_every_chunk_and_leaves_it_zeroed() {
        let config = PoolConfig::default()
            .with_segment_size(64 << 10)
            .with_memory_limit(5 * (64 << 10) * 32 / 4);
        let geometry = Geometry::new(&config).unwrap();
        let memory = SegmentMemory::new(&geometry);
        let bytes = memory.prefault(usize::MAX).unwrap();
        assert_eq!(bytes, geometry.max_segments * geometry.segment_size);
        for segment in 0..geometry.max_segments as u32 {
            // A later ensure takes nothing more.
            assert_eq!(memory.ensure_chunk(segment), Some(0));
            // SAFETY: the chunk is allocated; nothing else uses the memory.
            let b = unsafe { memory.bytes(segment, 0, geometry.segment_size) };
            assert!(b.iter().all(|&x| x == 0));
        }
    }

    #[test]
    fn a_partial_prefault_takes_whole_chunks_up_to_its_bytes_and_no_more() {
        let config = PoolConfig::default()
            .with_segment_size(4096)
            .with_memory_limit(5 * 4 * 4096)
            .with_bulk_segments(4);
        let geometry = Geometry::new(&config).unwrap();
        let chunk = 4 * 4096;
        let memory = SegmentMemory::new(&geometry);
        // One byte past the first chunk takes the second one whole.
        assert_eq!(memory.prefault(chunk + 1), Some(2 * chunk));
        for segment in 0..8 {
            assert_eq!(memory.ensure_chunk(segment), Some(0), "{segment}");
            // SAFETY: the chunk is allocated; nothing else uses the memory.
            let b = unsafe { memory.bytes(segment, 0, 4096) };
            assert!(b.iter().all(|&x| x == 0));
        }
        // The rest is taken lazily, as in a pool without prefault.
        assert_eq!(memory.ensure_chunk(8), Some(chunk));
        let none = SegmentMemory::new(&geometry);
        assert_eq!(none.prefault(0), Some(0));
        assert_eq!(none.ensure_chunk(0), Some(chunk));
    }

    #[test]
    #[should_panic(expected = "objects move between two different segments")]
    fn a_segment_pair_refuses_one_segment_twice() {
        let config = PoolConfig::default()
            .with_segment_size(4096)
            .with_memory_limit(4 * 4096)
            .with_bulk_segments(2);
        let memory = SegmentMemory::new(&Geometry::new(&config).unwrap());
        assert_eq!(memory.ensure_chunk(0), Some(2 * 4096));
        let _ = memory.pair(1, 1);
    }
}
