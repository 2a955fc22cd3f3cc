//! The ordered fragment stream and the reader trait.

use crate::range::PosRef;
use crate::{
    ClusteringKey, DecoratedKey, Error, Mutation, PartitionRange, Position, Row, Tombstone,
};

/// One piece of the ordered stream every reader produces and every writer
/// consumes.
///
/// A valid stream is a sequence of partitions in strictly increasing
/// [`DecoratedKey`] order. Each partition is a `PartitionStart`, an optional
/// `StaticRow`, then `ClusteringRow`s and `RangeTombstoneChange`s in
/// strictly increasing [`Position`] order, then `PartitionEnd`. A range
/// tombstone change at `position` sets the range tombstone in effect from
/// that position on (`None` ends it); one must be closed (`None`) before
/// `PartitionEnd`, and changes never sit at a row position
/// ([`Position::At`]). [`crate::StreamValidator`] checks all of this.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Fragment {
    /// Opens a partition.
    PartitionStart {
        /// The partition.
        key: DecoratedKey,
        /// The partition tombstone, if any.
        tombstone: Option<Tombstone>,
    },
    /// The partition's static row (at most one, right after the start).
    StaticRow(Row),
    /// A clustering row.
    ClusteringRow {
        /// The row's clustering key.
        key: ClusteringKey,
        /// The row.
        row: Row,
    },
    /// From `position` on, the effective range tombstone is `tombstone`.
    RangeTombstoneChange {
        /// Where the change happens (never a row position).
        position: Position,
        /// The tombstone in effect from here, or `None` to end it.
        tombstone: Option<Tombstone>,
    },
    /// Closes the partition.
    PartitionEnd,
}

impl Fragment {
    /// The clustering position of a clustering row or range tombstone
    /// change; `None` for the other kinds.
    pub fn position(&self) -> Option<Position> {
        match self {
            Fragment::ClusteringRow { key, .. } => Some(Position::At(key.clone())),
            Fragment::RangeTombstoneChange { position, .. } => Some(position.clone()),
            _ => None,
        }
    }

    pub(crate) fn pos_ref(&self) -> Option<PosRef<'_>> {
        match self {
            Fragment::ClusteringRow { key, .. } => Some(PosRef::Key(key.as_bytes(), 0)),
            Fragment::RangeTombstoneChange { position, .. } => Some(position.as_ref()),
            _ => None,
        }
    }

    /// A short name of the fragment kind, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Fragment::PartitionStart { .. } => "partition start",
            Fragment::StaticRow(_) => "static row",
            Fragment::ClusteringRow { .. } => "clustering row",
            Fragment::RangeTombstoneChange { .. } => "range tombstone change",
            Fragment::PartitionEnd => "partition end",
        }
    }
}

/// A source of an ordered [`Fragment`] stream (a memtable, an sstable, a
/// merge of other readers).
pub trait FragmentReader {
    /// The next fragment, or `None` at the end of the stream (of the
    /// current partition range).
    ///
    /// # Errors
    /// Whatever the source fails with; a reader that failed should not be
    /// used further.
    fn next(&mut self) -> Result<Option<Fragment>, Error>;

    /// Restricts the rest of the stream to partitions in `range`. Whatever
    /// is left of the current partition is dropped (no `PartitionEnd` is
    /// produced for it), and the stream continues with the first partition
    /// in `range` that comes after every partition already produced.
    /// Ranges are expected to move forward around the ring.
    ///
    /// # Errors
    /// Whatever the source fails with.
    fn fast_forward_to(&mut self, range: PartitionRange) -> Result<(), Error>;

    /// Skips the rest of the current partition: the next fragment returned
    /// is the next `PartitionStart` (or the end of the stream). Does nothing
    /// when the reader is between partitions (before the first fragment, or
    /// right after a `PartitionEnd`).
    ///
    /// # Errors
    /// Whatever the source fails with.
    fn next_partition(&mut self) -> Result<(), Error>;

    /// The next partition whole, as one (canonical) mutation; `None` at
    /// the end of the stream. To be called between partitions, as
    /// [`next_partition`](Self::next_partition)'s "between" means; the
    /// stream then goes on with the partition after it. The default
    /// collects the fragments ([`crate::collect_partition`], validating
    /// them); a reader that holds a partition as a mutation already (a
    /// cache hit) hands it over instead, without streaming it, and must
    /// give what the default would.
    ///
    /// # Errors
    /// As [`crate::collect_partition`].
    fn next_mutation(&mut self) -> Result<Option<Mutation>, Error> {
        crate::reader::collect_partition(self)
    }
}

impl<R: FragmentReader + ?Sized> FragmentReader for &mut R {
    fn next(&mut self) -> Result<Option<Fragment>, Error> {
        (**self).next()
    }

    fn fast_forward_to(&mut self, range: PartitionRange) -> Result<(), Error> {
        (**self).fast_forward_to(range)
    }

    fn next_partition(&mut self) -> Result<(), Error> {
        (**self).next_partition()
    }

    fn next_mutation(&mut self) -> Result<Option<Mutation>, Error> {
        (**self).next_mutation()
    }
}

impl<R: FragmentReader + ?Sized> FragmentReader for Box<R> {
    fn next(&mut self) -> Result<Option<Fragment>, Error> {
        (**self).next()
    }

    fn fast_forward_to(&mut self, range: PartitionRange) -> Result<(), Error> {
        (**self).fast_forward_to(range)
    }

    fn next_partition(&mut self) -> Result<(), Error> {
        (**self).next_partition()
    }

    fn next_mutation(&mut self) -> Result<Option<Mutation>, Error> {
        (**self).next_mutation()
    }
}
