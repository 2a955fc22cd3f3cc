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
/// | segment | offset | size` from high to low bits. The widths depend on the
/// segment size and the number of segments; whatever remains, capped at
/// [`MAX_GENERATION_BITS`], is the generation (any bits left above it stay
/// zero).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Geometry {
    pub(crate) segment_size: usize,
    pub(crate) segment_shift: u32,
    pub(crate) max_segments: usize,
    pub(crate) reserve: usize,
    pub(crate) compaction_min_free_percent: usize,
    pub(crate) bulk_shift: u32,
    pub(crate) max_object_size: usize,
    pub(crate) size_bits: u32,
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
        let size_bits = bits_for(max_object_size);
        let offset_bits = segment_shift;
        let segment_bits = bits_for(max_segments - 1).max(1);
        let used = size_bits + offset_bits + segment_bits + ALIGN_BITS;
        let generation_bits = 63u32.saturating_sub(used).min(MAX_GENERATION_BITS);
        if generation_bits < MIN_GENERATION_BITS || max_segments > u32::MAX as usize {
            return Err(Error::MemoryLimitTooLarge {
                limit: config.memory_limit,
                segment_size: size,
                segments: max_segments,
                generation_bits,
                min_generation_bits: MIN_GENERATION_BITS,
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
        assert!(e.to_string().contains("generation bits"));
    }
}
