//! What the cache reads through to on a miss.

use mutation::{ClusteringRange, FragmentReader, PartitionRange};

/// The data the cache caches: in the replica, its sstables (never its
/// memtables, which the replica merges with the cache's reader itself).
///
/// A reader opened after the replica committed a flushed sstable must see
/// that sstable: [`RowCache::update_from`](crate::RowCache::update_from) is
/// called only after the commit, and population from a reader opened
/// before the update began is refused (see the crate documentation on
/// phases).
pub trait UnderlyingSource: Send + Sync {
    /// A reader of `range`, each partition restricted to `slice` (the
    /// partition tombstone and static row kept, rows inside the slice,
    /// range tombstones clipped to it).
    ///
    /// # Errors
    /// Whatever the source fails with (an I/O or corruption error, wrapped
    /// in [`mutation::Error::Source`]).
    fn make_reader(
        &self,
        range: PartitionRange,
        slice: ClusteringRange,
    ) -> Result<Box<dyn FragmentReader + Send>, mutation::Error>;
}
