//! The crate's one error type.

/// Everything the row cache can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A [`CacheConfig::max_bytes`](crate::CacheConfig::max_bytes) outside
    /// what the pool can hold.
    #[error(
        "row cache budget of {bytes} bytes is outside the allowed {min}..={max} bytes \
         (one segment up to the pool's memory limit)"
    )]
    BudgetOutOfRange {
        /// The configured budget.
        bytes: usize,
        /// The smallest allowed budget (one segment of the pool).
        min: usize,
        /// The largest allowed budget (the pool's memory limit).
        max: usize,
    },
    /// A [`CacheConfig::max_bytes`](crate::CacheConfig::max_bytes) given
    /// to a cache in a shared [`CacheTracker`](crate::CacheTracker), whose
    /// budget is the one budget of all its caches.
    #[error(
        "row cache budget of {bytes} bytes given to a cache in a shared tracker: the \
         tracker's budget bounds all its caches together, so a cache in it takes none"
    )]
    BudgetOfSharedTracker {
        /// The budget that was given.
        bytes: usize,
    },
    /// A [`CacheConfig::piece_bytes`](crate::CacheConfig::piece_bytes) of 0.
    #[error("row cache piece size of 0 bytes is below the 1-byte minimum")]
    PieceBytesZero,
    /// The underlying source failed (opening a reader or reading from it).
    #[error("the row cache's underlying source failed")]
    Source(#[source] mutation::Error),
    /// The flushed stream given to
    /// [`RowCache::update_from`](crate::RowCache::update_from) failed or
    /// broke the stream rules; the partitions it had not delivered yet were
    /// made discontinuous and evicted, so the cache answers nothing
    /// partial.
    #[error(
        "the flushed stream failed after {partitions} partitions; the rest of the ring \
         was invalidated"
    )]
    UpdateStream {
        /// Partitions that entered the cache before the failure.
        partitions: usize,
        /// The stream's error.
        #[source]
        source: mutation::Error,
    },
    /// Bytes the cache stored that no longer decode (a bug, reported
    /// rather than answered with wrong data).
    #[error("cached partition {key} does not decode")]
    Corrupt {
        /// The partition, rendered.
        key: String,
        /// The decoder's error.
        #[source]
        source: mutation::Error,
    },
    /// A flushed memtable's index did not decode as it was handed over (a
    /// bug); the memtable kept its data, and the cache invalidated the
    /// whole ring.
    #[error("the flushed memtable could not be handed over to the cache")]
    HandOver(#[source] memtable::Error),
    /// A partition adopted from a flushed memtable no longer decodes (a
    /// bug, reported rather than answered with wrong data).
    #[error("adopted partition {key} does not decode")]
    AdoptedCorrupt {
        /// The partition, rendered.
        key: String,
        /// The memtable layout's decoder's error.
        #[source]
        source: memtable::Error,
    },
}

impl From<Error> for mutation::Error {
    /// Cache errors reach a [`FragmentReader`](mutation::FragmentReader)'s
    /// caller as [`mutation::Error::Source`]; an underlying source's own
    /// error is passed through unwrapped.
    fn from(e: Error) -> Self {
        match e {
            Error::Source(inner) => inner,
            other => mutation::Error::Source(Box::new(other)),
        }
    }
}
