//! Pool configuration and the bit layout of handle-table entries derived from it.

use crate::Error;

/// The smallest supported segment size.
pub const MIN_SEGMENT_SIZE: usize = 4 << 10;
/// The largest supported segment size.
pub const MAX_SEGMENT_SIZE: usize = 64 << 20;
/// The largest supported object alignment.
pub const MAX_ALIGN: usize = 4096;
/// An object's alignment is also at most the segment size divided by this
/// (see [`Region::alloc`](crate::Region::alloc)).
pub(crate) const MAX_ALIGN_SEGMENT_DIVISOR: usize = 8;
/// A handle keeps at least this many generation bits (see [`Handle`](crate::Handle)).
const MIN_GENERATION_BITS: u32 = 12;
/// A handle keeps at most this many generation bits: the rest of its low 32
/// bits (at least 16) hold the epoch of its table part.
pub(crate) const MAX_GENERATION_BITS: u32 = 16;
/// Bits of a handle-table entry that hold log2(alignment).
pub(crate) const ALIGN_BITS: u32 = 4;
/// Bits of a live handle-table entry available to its fields: bit 63 marks
/// the entry live.
const ENTRY_BITS: u32 = 63;

/// Configuration of a [`SegmentPool`](crate::SegmentPool).
///
/// ```
/// use logalloc::PoolConfig;
/// let config = PoolConfig::default()
///     .with_segment_size(64 << 10)
///     .with_memory_limit(16 << 20);
/// assert_eq!(config.segment_size, 64 << 10);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolConfig {
    /// Size of one segment in bytes: a power of two between 4 KiB and
    /// 64 MiB. Default 128 KiB. The maximum object size is 10% of it.
    pub segment_size: usize,
    /// Most bytes of segments the pool takes from the system allocator;
    /// rounded down to whole segments. Default 1 GiB.
    pub memory_limit: usize,
    /// Segments kept free for compaction destinations: an ordinary
    /// allocation does not take the last `emergency_reserve` segments.
    /// Default 2.
    pub emergency_reserve: usize,
    /// How many segments one system allocation provides (a power of two).
    /// Default 32 (4 MiB with the default segment size).
    pub bulk_segments: usize,
    /// A closed segment is compacted only if at least this percentage of
    /// it is free (1..=100). Default 15, ScyllaDB's rule: moving more than
    /// 85% of a segment to win back less than 15% is rarely worth it. It is
    /// an efficiency rule, not a limit: when an allocation would otherwise
    /// fail, reclaim compacts below it as a last resort (counted as
    /// [`forced_compactions`](crate::RegionStats::forced_compactions); see
    /// the crate documentation). [`Region::compact`](crate::Region::compact)
    /// always keeps it.
    pub compaction_min_free_percent: u8,
    /// Take the whole [`memory_limit`](Self::memory_limit) from the
    /// system when the pool is made, and touch every page of it, instead of
    /// taking chunks as segments are first needed (default `false`).
    /// ScyllaDB takes all its memory at start. Memory taken lazily is
    /// faulted in by whichever allocation first writes each page, and that
    /// allocation may hold its owner's locks meanwhile: under a write
    /// storm the first pass over a 2 GiB pool made a memtable's apply hold
    /// its lock 0.97 ms on average instead of 20 us (page faults of a
    /// virtual machine, measured by replica-stress). The price is the whole
    /// limit resident from the start, and the time to touch it in
    /// [`SegmentPool::new`](crate::SegmentPool::new).
    pub prefault: bool,
    /// With [`prefault`](Self::prefault), how much to take and touch at
    /// start: `None` (the default) the whole limit, `Some(n)` the first `n`
    /// bytes rounded up to whole bulk allocations (at most the limit); the
    /// rest is taken lazily as usual. The pool carves segments in index
    /// order and reuses freed ones first, so its working set is its lowest
    /// segments: an owner whose normal use is well below the limit (the
    /// limit being headroom) prefaults that use and leaves the headroom
    /// untouched.
    pub prefault_bytes: Option<usize>,
    /// Store every object's size in a header in front of it even when the
    /// handle-table entry has room for it (see [`Geometry`]); set only by
    /// `with_object_headers` (feature `testing`), to test and measure the
    /// large-pool layout with small pools.
    pub(crate) object_headers: bool,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            segment_size: 128 << 10,
            memory_limit: 1 << 30,
            emergency_reserve: 2,
            bulk_segments: 32,
            compaction_min_free_percent: 15,
            prefault: false,
            prefault_bytes: None,
            object_headers: false,
        }
    }
}

impl PoolConfig {
    /// Sets [`segment_size`](Self::segment_size).
    pub fn with_segment_size(mut self, segment_size: usize) -> Self {
        self.segment_size = segment_size;
        self
    }

    /// Sets [`prefault`](Self::prefault).
    pub fn with_prefault(mut self, prefault: bool) -> Self {
        self.prefault = prefault;
        self
    }

    /// Sets [`prefault_bytes`](Self::prefault_bytes).
    pub fn with_prefault_bytes(mut self, bytes: Option<usize>) -> Self {
        self.prefault_bytes = bytes;
        self
    }

    /// Sets [`memory_limit`](Self::memory_limit).
    pub fn with_memory_limit(mut self, memory_limit: usize) -> Self {
        self.memory_limit = memory_limit;
        self
    }

    /// Sets [`emergency_reserve`](Self::emergency_reserve).
    pub fn with_emergency_reserve(mut self, segments: usize) -> Self {
        self.emergency_reserve = segments;
        self
    }

    /// Sets [`bulk_segments`](Self::bulk_segments).
    pub fn with_bulk_segments(mut self, segments: usize) -> Self {
        self.bulk_segments = segments;
        self
    }

    /// Sets [`compaction_min_free_percent`](Self::compaction_min_free_percent).
    pub fn with_compaction_min_free_percent(mut self, percent: u8) -> Self {
        self.compaction_min_free_percent = percent;
        self
    }

    /// Stores every object's size in a header in front of the object, as a
    /// pool too large for sizes in its handle-table entries does, whatever
    /// the limit: for tests and measurements of that layout with small
    /// pools. Only with the `testing` feature.
    #[cfg(feature = "testing")]
    pub fn with_object_headers(mut self) -> Self {
        self.object_headers = true;
        self
    }

    /// The largest object a region of this configuration accepts: 10% of a segment.
    pub fn max_object_size(&self) -> usize {
        self.segment_size / 10
    }
}

/// Number of bits needed to represent `value`.
fn bits_for(value: usize) -> u32 {
    usize::BITS - value.leading_zeros()
}

/// The validated geometry of a pool and the packing of handle-table entries.
///
/// A live entry is one `u64`: bit 63 set, then `generation | alignment class
/// | segment | offset | size` from high to low bits, with the offset at byte
/// granularity. The widths depend on the segment size and the number of
/// segments; whatever remains, capped at [`MAX_GENERATION_BITS`], is the
/// generation (any bits left above it stay zero).
///
/// When that would leave fewer than [`MIN_GENERATION_BITS`] (more than
/// about 8 GiB of 128 KiB segments), the size leaves the entry (`size_bits`
/// is 0) and goes into an *object header*: the `header_bytes` (2, or 4 when
/// the largest object does not fit in 16 bits) in front of each object hold
/// its size, little-endian, and the entry's offset names the object's first
/// byte, after its header. With 128 KiB segments that frees 14 bits: a pool
/// of 1 TiB (2^23 segments) keeps 16 generation bits, and the limit is
/// 2^30 segments (128 TiB). Pools that fit without headers keep the entry
/// layout they always had, and their objects have no header.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Geometry {
    pub(crate) segment_size: usize,
    pub(crate) segment_shift: u32,
    pub(crate) max_segments: usize,
    pub(crate) reserve: usize,
    pub(crate) compaction_min_free_percent: usize,
    pub(crate) bulk_shift: u32,
    pub(crate) max_object_size: usize,
    /// Bits of the entry that hold the object's size (0: in its header).
    pub(crate) size_bits: u32,
    /// Bytes of the header in front of every object (0: size in the entry).
    pub(crate) header_bytes: u32,
    pub(crate) offset_bits: u32,
    pub(crate) segment_bits: u32,
    pub(crate) generation_bits: u32,
}

impl Geometry {
    pub(crate) fn new(config: &PoolConfig) -> Result<Geometry, Error> {
        let size = config.segment_size;
        if !size.is_power_of_two() || !(MIN_SEGMENT_SIZE..=MAX_SEGMENT_SIZE).contains(&size) {
            return Err(Error::InvalidSegmentSize {
                size,
                min: MIN_SEGMENT_SIZE,
                max: MAX_SEGMENT_SIZE,
            });
        }
        if config.bulk_segments == 0 || !config.bulk_segments.is_power_of_two() {
            return Err(Error::InvalidBulkSegments {
                segments: config.bulk_segments,
            });
        }
        let percent = config.compaction_min_free_percent;
        if !(1..=100).contains(&percent) {
            return Err(Error::InvalidCompactionThreshold { percent });
        }
        let max_segments = config.memory_limit / size;
        let min_segments = config.emergency_reserve.saturating_add(1);
        if max_segments < min_segments {
            return Err(Error::MemoryLimitTooSmall {
                limit: config.memory_limit,
                segment_size: size,
                min_segments,
            });
        }
        let segment_shift = size.trailing_zeros();
        let max_object_size = config.max_object_size();
        let offset_bits = segment_shift;
        let segment_bits = bits_for(max_segments - 1).max(1);
        let place_bits = offset_bits + segment_bits + ALIGN_BITS;
        let generations = |size_bits: u32| {
            ENTRY_BITS
                .saturating_sub(place_bits + size_bits)
                .min(MAX_GENERATION_BITS)
        };
        let inline_size_bits = bits_for(max_object_size);
        let (size_bits, header_bytes) =
            if !config.object_headers && generations(inline_size_bits) >= MIN_GENERATION_BITS {
                (inline_size_bits, 0)
            } else if max_object_size <= usize::from(u16::MAX) {
                (0, 2)
            } else {
                (0, 4)
            };
        let generation_bits = generations(size_bits);
        if generation_bits < MIN_GENERATION_BITS || max_segments > u32::MAX as usize {
            // The most segments whose index leaves the minimum generation
            // bits next to offset and alignment (sizes in headers).
            let index_bits = ENTRY_BITS - MIN_GENERATION_BITS - ALIGN_BITS - offset_bits;
            let addressable = (1u64 << index_bits).min(u64::from(u32::MAX)) as usize;
            return Err(Error::MemoryLimitTooLarge {
                limit: config.memory_limit,
                segment_size: size,
                segments: max_segments,
                max_segments: addressable,
                max_limit: addressable.saturating_mul(size),
            });
        }
        Ok(Geometry {
            segment_size: size,
            segment_shift,
            max_segments,
            reserve: config.emergency_reserve,
            compaction_min_free_percent: usize::from(percent),
            bulk_shift: config.bulk_segments.trailing_zeros(),
            max_object_size,
            size_bits,
            header_bytes,
            offset_bits,
            segment_bits,
            generation_bits,
        })
    }

    pub(crate) fn memory_limit(&self) -> usize {
        self.max_segments * self.segment_size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_geometry_has_room_for_generations() {
        let g = Geometry::new(&PoolConfig::default()).unwrap();
        assert_eq!(g.max_object_size, 13107);
        let bits = g.size_bits + g.offset_bits + g.segment_bits + ALIGN_BITS;
        assert_eq!(bits + g.generation_bits, 63);
        assert_eq!(g.generation_bits, 15, "{g:?}");
        let small = PoolConfig::default()
            .with_segment_size(MIN_SEGMENT_SIZE)
            .with_memory_limit(1 << 20);
        let g = Geometry::new(&small).unwrap();
        assert_eq!(g.generation_bits, MAX_GENERATION_BITS, "capped: {g:?}");
    }

    #[test]
    fn bad_configs_are_refused() {
        let e = Geometry::new(&PoolConfig::default().with_segment_size(100_000)).unwrap_err();
        assert!(
            matches!(e, Error::InvalidSegmentSize { size: 100_000, .. }),
            "{e}"
        );
        let e = Geometry::new(&PoolConfig::default().with_memory_limit(128 << 10)).unwrap_err();
        assert!(
            matches!(
                e,
                Error::MemoryLimitTooSmall {
                    min_segments: 3,
                    ..
                }
            ),
            "{e}"
        );
        let e =
            Geometry::new(&PoolConfig::default().with_compaction_min_free_percent(0)).unwrap_err();
        assert_eq!(e, Error::InvalidCompactionThreshold { percent: 0 });
        assert!(e.to_string().contains("between 1 and 100"), "{e}");
        let e = Geometry::new(&PoolConfig::default().with_bulk_segments(3)).unwrap_err();
        assert!(
            matches!(e, Error::InvalidBulkSegments { segments: 3 }),
            "{e}"
        );
        let huge = PoolConfig::default()
            .with_segment_size(MAX_SEGMENT_SIZE)
            .with_memory_limit(1 << 62);
        let e = Geometry::new(&huge).unwrap_err();
        assert!(matches!(e, Error::MemoryLimitTooLarge { .. }), "{e}");
        assert!(e.to_string().contains("use a smaller memory limit"), "{e}");
    }

    /// The bits of a live entry a geometry uses, LIVE bit included.
    fn entry_bits(g: &Geometry) -> u32 {
        1 + g.generation_bits + ALIGN_BITS + g.segment_bits + g.offset_bits + g.size_bits
    }

    #[test]
    fn a_tebibyte_of_default_segments_keeps_sixteen_generation_bits() {
        let g = Geometry::new(&PoolConfig::default().with_memory_limit(1 << 40)).unwrap();
        assert_eq!(g.max_segments, 1 << 23);
        assert_eq!(g.memory_limit(), 1 << 40);
        assert_eq!(
            (g.segment_bits, g.offset_bits, g.size_bits, g.header_bytes),
            (23, 17, 0, 2),
            "sizes move into 2-byte headers: {g:?}"
        );
        assert_eq!(g.generation_bits, MAX_GENERATION_BITS);
        assert_eq!(entry_bits(&g), 61, "one word, three bits to spare");
        // The limit of issue 39's report (131,232 segments) now fits.
        let g = Geometry::new(&PoolConfig::default().with_memory_limit(17_200_840_704)).unwrap();
        assert_eq!((g.header_bytes, g.generation_bits), (2, 16), "{g:?}");
    }

    #[test]
    fn pools_that_fit_keep_sizes_in_entries() {
        // 8 GiB of 128 KiB segments is the largest pool with sizes in the
        // entries (12 generation bits); one segment more moves them out.
        let fits = PoolConfig::default().with_memory_limit(8 << 30);
        let g = Geometry::new(&fits).unwrap();
        assert_eq!(
            (g.header_bytes, g.size_bits, g.generation_bits),
            (0, 14, 12)
        );
        assert_eq!(entry_bits(&g), 64);
        let over = fits.with_memory_limit((8 << 30) + (128 << 10));
        let g = Geometry::new(&over).unwrap();
        assert_eq!((g.header_bytes, g.size_bits, g.generation_bits), (2, 0, 16));
        // The default pool, unchanged; and the test hook forcing headers.
        let g = Geometry::new(&PoolConfig::default()).unwrap();
        assert_eq!((g.header_bytes, g.generation_bits), (0, 15));
        let forced = PoolConfig {
            object_headers: true,
            ..PoolConfig::default()
        };
        let g = Geometry::new(&forced).unwrap();
        assert_eq!((g.header_bytes, g.size_bits, g.generation_bits), (2, 0, 16));
    }

    #[test]
    fn the_largest_pools_per_segment_size() {
        // 128 KiB segments: 2^30 segments (128 TiB) keep 12 generation
        // bits; one more segment is refused, naming the limit.
        let most = PoolConfig::default().with_memory_limit(1 << 47);
        let g = Geometry::new(&most).unwrap();
        assert_eq!((g.segment_bits, g.generation_bits), (30, 12));
        assert_eq!(entry_bits(&g), 64);
        let e = Geometry::new(&most.with_memory_limit((1 << 47) + (128 << 10))).unwrap_err();
        assert_eq!(
            e,
            Error::MemoryLimitTooLarge {
                limit: (1 << 47) + (128 << 10),
                segment_size: 128 << 10,
                segments: (1 << 30) + 1,
                max_segments: 1 << 30,
                max_limit: 1 << 47,
            }
        );
        let message = e.to_string();
        assert!(
            message.contains("at most") || message.contains("more than"),
            "{e}"
        );
        assert!(!message.contains("larger segments"), "{e}");
        // 64 MiB segments: objects up to 6.4 MiB need 4-byte headers.
        let big = PoolConfig::default()
            .with_segment_size(MAX_SEGMENT_SIZE)
            .with_memory_limit(1 << 40);
        let g = Geometry::new(&big).unwrap();
        assert_eq!(
            (g.header_bytes, g.segment_bits, g.generation_bits),
            (4, 14, 16)
        );
        // 4 KiB segments: the segment index (a u32) is the limit.
        let small = PoolConfig::default()
            .with_segment_size(MIN_SEGMENT_SIZE)
            .with_memory_limit(1 << 44);
        let e = Geometry::new(&small).unwrap_err();
        assert!(
            matches!(e, Error::MemoryLimitTooLarge { max_segments, .. } if max_segments == u32::MAX as usize),
            "{e}"
        );
    }
}
