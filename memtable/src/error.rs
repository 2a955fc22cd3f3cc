//! The crate's error type.

/// Everything that can go wrong in a memtable. A failed
/// [`apply`](crate::Memtable::apply) changes nothing: the memtable reads and
/// holds exactly what it did before.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The memtable was sealed for flushing and takes no more writes.
    #[error(
        "memtable is sealed for flushing and takes no more writes (refused a mutation of \
         partition {partition}); apply it to the table's new active memtable"
    )]
    Sealed {
        /// The partition of the refused mutation, rendered.
        partition: String,
    },
    /// The region could not allocate what the mutation needs.
    #[error(
        "out of memory applying a mutation of partition {partition}; the memtable is unchanged"
    )]
    OutOfMemory {
        /// The partition of the refused mutation, rendered.
        partition: String,
        /// The allocator's error.
        #[source]
        source: logalloc::Error,
    },
    /// A key or value longer than a chunked region string can hold.
    #[error(
        "a stored key or value of {size} bytes exceeds the {max}-byte limit of the memtable's \
         segment pool (use larger segments)"
    )]
    ValueTooLarge {
        /// Its length.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// Merging the mutation into a stored row would make that row larger
    /// than one sstable block may hold
    /// ([`mutation::limits::MAX_ROW_SIZE`]): the row could never be flushed,
    /// so the apply is refused and the memtable is unchanged.
    #[error(
        "row {row} of partition {partition} would grow to {size} bytes, over the {limit}-byte \
         row limit an sstable can write; the memtable is unchanged"
    )]
    RowTooLarge {
        /// The partition, rendered.
        partition: String,
        /// The clustering key, rendered.
        row: String,
        /// The merged row's size bound ([`mutation::limits::row_size_bound`]).
        size: usize,
        /// The limit ([`mutation::limits::MAX_ROW_SIZE`]).
        limit: usize,
    },
    /// The pool's segments are too small for index nodes.
    #[error(
        "segment pool's largest object of {max_object} bytes is below the {min} bytes an index \
         node needs; use segments of at least 4 KiB"
    )]
    SegmentTooSmall {
        /// The pool's largest object.
        max_object: usize,
        /// The smallest node size.
        min: usize,
    },
    /// The index would grow deeper than supported.
    #[error("memtable index would exceed {max} levels")]
    IndexTooDeep {
        /// The deepest supported index.
        max: usize,
    },
    /// Stored bytes do not decode: a bug, never bad input.
    #[error("memtable storage is corrupt: {detail}")]
    Corrupt {
        /// What did not decode.
        detail: String,
    },
    /// Any other region error (a stale handle would be a bug).
    #[error("region error")]
    Region(#[source] logalloc::Error),
    /// A mutation-level error (for example from building a mutation).
    #[error(transparent)]
    Mutation(#[from] mutation::Error),
}

impl From<logalloc::Error> for Error {
    fn from(e: logalloc::Error) -> Self {
        match e {
            logalloc::Error::ManagedTooLarge { size, max } => Error::ValueTooLarge { size, max },
            other => Error::Region(other),
        }
    }
}

impl From<Error> for mutation::Error {
    fn from(e: Error) -> Self {
        match e {
            Error::Mutation(m) => m,
            other => mutation::Error::Source(Box::new(other)),
        }
    }
}
