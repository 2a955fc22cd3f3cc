//! The crate's error type.

use std::fmt;

use crate::Handle;

/// Everything that can go wrong in logalloc.
///
/// Every failing operation leaves the pool and the region exactly as usable
/// as before: a refused allocation stores nothing, a refused `free` frees
/// nothing, a refused `merge` moves nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configured segment size is not a power of two or out of range.
    #[error("segment size of {size} bytes must be a power of two between {min} and {max} bytes")]
    InvalidSegmentSize {
        /// The requested segment size.
        size: usize,
        /// The smallest allowed segment size.
        min: usize,
        /// The largest allowed segment size.
        max: usize,
    },

    /// The memory limit does not hold the emergency reserve plus one segment.
    #[error(
        "memory limit of {limit} bytes holds fewer than the {min_segments} segments of \
         {segment_size} bytes needed (emergency reserve plus one)"
    )]
    MemoryLimitTooSmall {
        /// The requested memory limit.
        limit: usize,
        /// The segment size.
        segment_size: usize,
        /// The smallest number of segments the limit must hold.
        min_segments: usize,
    },

    /// The memory limit has more segments than a handle-table entry can
    /// address while keeping a useful generation number (at least 12 bits).
    #[error(
        "memory limit of {limit} bytes is {segments} segments of {segment_size} bytes, more than \
         the {max_segments} segments ({max_limit} bytes) a pool of {segment_size}-byte segments \
         can address; use a smaller memory limit"
    )]
    MemoryLimitTooLarge {
        /// The requested memory limit.
        limit: usize,
        /// The segment size.
        segment_size: usize,
        /// How many segments the limit is.
        segments: usize,
        /// The most segments of this size a pool can have.
        max_segments: usize,
        /// The largest memory limit with this segment size, in bytes.
        max_limit: usize,
    },

    /// The bulk allocation count is zero or not a power of two.
    #[error("bulk allocation of {segments} segments must be a power of two of at least 1")]
    InvalidBulkSegments {
        /// The requested number of segments per bulk allocation.
        segments: usize,
    },

    /// The compaction threshold is not a percentage between 1 and 100.
    #[error("compaction threshold of {percent}% free must be between 1 and 100")]
    InvalidCompactionThreshold {
        /// The requested percentage.
        percent: u8,
    },

    /// An object larger than the maximum object size (10% of a segment).
    #[error(
        "object of {size} bytes exceeds the {max}-byte maximum object size (10% of a segment); \
         split the value into chunks"
    )]
    ObjectTooLarge {
        /// The requested size.
        size: usize,
        /// The maximum object size of the pool.
        max: usize,
    },

    /// An alignment that is not a power of two or is above the maximum.
    #[error("alignment of {align} bytes must be a power of two of at most {max} bytes")]
    InvalidAlignment {
        /// The requested alignment.
        align: usize,
        /// The largest supported alignment.
        max: usize,
    },

    /// The pool is at its memory limit and reclaim (free segments,
    /// compaction, eviction) could not free a segment.
    #[error(
        "out of memory: allocation of {size} bytes failed, the segment pool is at its \
         {limit}-byte limit and {reason}"
    )]
    OutOfMemory {
        /// The size of the allocation that failed.
        size: usize,
        /// The pool's memory limit in bytes.
        limit: usize,
        /// Why reclaim stopped.
        reason: OomReason,
    },

    /// `full_compaction` could not get a destination segment; every object
    /// is still intact, some were moved and some were not.
    #[error(
        "out of memory: full compaction needs a destination segment and the segment pool is at \
         its {limit}-byte limit"
    )]
    CompactionOutOfMemory {
        /// The pool's memory limit in bytes.
        limit: usize,
    },

    /// An allocation failed because a failure was injected for testing
    /// (`SegmentPool::fail_nth_allocation`, with the `testing` feature).
    #[error("injected allocation failure: allocation of {size} bytes refused for testing")]
    InjectedFailure {
        /// The size of the allocation that was refused.
        size: usize,
    },

    /// The handle was issued by this region (or a region merged into it), but
    /// its object has been freed.
    #[error("stale handle {handle:?}: its object was freed")]
    StaleHandle {
        /// The offending handle.
        handle: Handle,
    },

    /// The handle was not issued by this region nor by any region merged into it.
    #[error("handle {handle:?} does not belong to this region")]
    ForeignHandle {
        /// The offending handle.
        handle: Handle,
    },

    /// `merge` was called with a region of another segment pool.
    #[error("cannot merge regions of different segment pools")]
    PoolMismatch,

    /// A [`ManagedBytes`](crate::ManagedBytes) string longer than its
    /// index object can describe.
    #[error(
        "byte string of {size} bytes exceeds the {max}-byte limit of a chunked string \
         (the chunk index must fit the largest object)"
    )]
    ManagedTooLarge {
        /// The requested length.
        size: usize,
        /// The longest chunked string of the pool.
        max: usize,
    },

    /// A chunked string's index object is malformed (not a list of handles).
    #[error("chunked string index of {len} bytes is malformed")]
    MalformedManaged {
        /// The index object's length.
        len: usize,
    },

    /// The pool-wide handle table has no free part left.
    #[error("handle table full: all {parts} handle-table parts of the pool are in use")]
    HandleTableFull {
        /// The number of handle-table parts a pool can have.
        parts: usize,
    },
}

/// Why reclaim gave up on an allocation ([`Error::OutOfMemory`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OomReason {
    /// No region had anything left to compact or evict.
    NothingToReclaim,
    /// Forced compaction of the allocating region could pack its objects
    /// no tighter, and no other region had anything to give.
    Packed,
    /// The evictable regions that still held memory stayed locked (by
    /// readers, or by their own allocations) through every bounded wait.
    BusyEvictable {
        /// The waits made, each up to `wait_ms`.
        waits: u32,
        /// The bound of one wait, in milliseconds.
        wait_ms: u64,
    },
    /// Reclaim took its whole step allowance without finding a segment.
    StepLimit {
        /// The steps taken.
        steps: usize,
    },
    /// The system allocator refused the pool's memory
    /// ([`PoolConfig::prefault`](crate::PoolConfig::prefault) takes it all
    /// when the pool is made).
    SystemAllocation,
}

impl fmt::Display for OomReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OomReason::NothingToReclaim => {
                f.write_str("nothing more could be compacted or evicted")
            }
            OomReason::Packed => f.write_str(
                "its objects could be packed no tighter and no other region had memory to give",
            ),
            OomReason::BusyEvictable { waits, wait_ms } => write!(
                f,
                "the evictable regions holding memory stayed busy through {waits} waits of \
                 {wait_ms} ms"
            ),
            OomReason::StepLimit { steps } => {
                write!(f, "reclaim found no segment in {steps} steps")
            }
            OomReason::SystemAllocation => {
                f.write_str("the system allocator refused the pool's memory")
            }
        }
    }
}

impl Error {
    /// True for the errors an allocation returns when memory is unavailable:
    /// [`OutOfMemory`](Error::OutOfMemory) and
    /// [`InjectedFailure`](Error::InjectedFailure).
    pub fn is_out_of_memory(&self) -> bool {
        matches!(
            self,
            Error::OutOfMemory { .. } | Error::InjectedFailure { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_memory_reasons_say_what_gave_out() {
        let e = Error::OutOfMemory {
            size: 8 << 30,
            limit: 8 << 30,
            reason: OomReason::SystemAllocation,
        };
        let text = e.to_string();
        assert!(text.contains("system allocator refused"), "{text}");
        assert!(
            OomReason::NothingToReclaim
                .to_string()
                .contains("compacted or evicted")
        );
    }
}
