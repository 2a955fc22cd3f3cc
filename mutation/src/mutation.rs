//! Mutations: everything written to one partition, in canonical form.

use std::collections::BTreeMap;
use std::collections::btree_map;
use std::ops::Bound;
use std::{iter, vec};

use bytes::Bytes;

use crate::range::PosRef;
use crate::{
    Cell, ClusteringKey, ClusteringRange, ColumnId, DecoratedKey, Error, Fragment, Position,
    RangeTombstone, RangeTombstoneList, Row, RowMarker, Tombstone,
};

/// The writes (and deletions) to one partition: a partition tombstone, a
/// static row, clustering rows and range tombstones.
///
/// A `Mutation` is always valid (built by [`MutationBuilder::build`], which
/// checks everything) and always *canonical*: versions are reconciled,
/// overlapping range tombstones are collapsed to the greatest tombstone at
/// each position, and anything shadowed is removed (data with a timestamp
/// `<=` a covering partition, range or row tombstone; row or range
/// tombstones not greater than a covering tombstone; rows left empty).
/// Two mutations holding the same information are therefore equal, and
/// [`Mutation::apply`] is commutative, associative and idempotent.
///
/// Empty partitions are kept: a mutation with nothing in it still produces a
/// partition start and end in a stream.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Mutation {
    key: DecoratedKey,
    partition_tombstone: Option<Tombstone>,
    static_row: Row,
    rows: BTreeMap<ClusteringKey, Row>,
    range_tombstones: RangeTombstoneList,
}

impl Mutation {
    /// An empty mutation of the partition `key`.
    pub fn new(key: DecoratedKey) -> Self {
        Self {
            key,
            partition_tombstone: None,
            static_row: Row::new(),
            rows: BTreeMap::new(),
            range_tombstones: RangeTombstoneList::new(),
        }
    }

    /// Starts building a mutation of the partition `key`.
    pub fn builder(key: DecoratedKey) -> MutationBuilder {
        MutationBuilder::new(key)
    }

    /// The partition.
    pub fn key(&self) -> &DecoratedKey {
        &self.key
    }

    /// The partition tombstone.
    pub fn partition_tombstone(&self) -> Option<Tombstone> {
        self.partition_tombstone
    }

    /// The static row, if it holds anything.
    pub fn static_row(&self) -> Option<&Row> {
        (!self.static_row.is_empty()).then_some(&self.static_row)
    }

    /// The clustering rows, in clustering order.
    pub fn rows(&self) -> &BTreeMap<ClusteringKey, Row> {
        &self.rows
    }

    /// The row with clustering key `key`.
    pub fn row(&self, key: &ClusteringKey) -> Option<&Row> {
        self.rows.get(key)
    }

    /// The range tombstones, in canonical change-point form.
    pub fn range_tombstones(&self) -> &RangeTombstoneList {
        &self.range_tombstones
    }

    /// True if the mutation holds nothing at all.
    pub fn is_empty(&self) -> bool {
        self.partition_tombstone.is_none()
            && self.static_row.is_empty()
            && self.rows.is_empty()
            && self.range_tombstones.is_empty()
    }

    /// Reconciles `other` into `self` (see the crate docs for the rules).
    ///
    /// # Errors
    /// [`Error::PartitionKeyMismatch`] if `other` is for another partition;
    /// `self` is then unchanged.
    pub fn apply(&mut self, other: Mutation) -> Result<(), Error> {
        if self.key != other.key {
            return Err(Error::PartitionKeyMismatch {
                left: self.key.to_string(),
                right: other.key.to_string(),
            });
        }
        self.apply_same_partition(other);
        Ok(())
    }

    /// [`Mutation::apply`] for a mutation known to be of this partition.
    fn apply_same_partition(&mut self, other: Mutation) {
        let old_pt = self.partition_tombstone;
        self.partition_tombstone = old_pt.max(other.partition_tombstone);
        let pt_changed = self.partition_tombstone != old_pt;
        let rts_changed = self
            .range_tombstones
            .apply_list_changed(&other.range_tombstones);
        self.static_row.apply(other.static_row);
        if pt_changed || rts_changed || self.rows.is_empty() {
            // Deletions grew (or there is nothing to keep): compact all.
            if self.rows.is_empty() {
                self.rows = other.rows;
            } else {
                for (k, row) in other.rows {
                    match self.rows.entry(k) {
                        btree_map::Entry::Vacant(v) => {
                            v.insert(row);
                        }
                        btree_map::Entry::Occupied(mut o) => o.get_mut().apply(row),
                    }
                }
            }
            self.canonicalize();
            return;
        }
        // The partition's deletions are unchanged and `self` is canonical:
        // only the rows `other` touches can change.
        let pt = self.partition_tombstone;
        self.static_row.compact(pt);
        for (k, row) in other.rows {
            let covering = self.covering_tombstone(&k);
            match self.rows.entry(k) {
                btree_map::Entry::Vacant(v) => {
                    let mut row = row;
                    row.compact(covering);
                    if !row.is_empty() {
                        v.insert(row);
                    }
                }
                btree_map::Entry::Occupied(mut o) => {
                    o.get_mut().apply(row);
                    o.get_mut().compact(covering);
                    if o.get().is_empty() {
                        o.remove();
                    }
                }
            }
        }
    }

    /// The tombstone covering the row `key` from outside: the greater of the
    /// partition tombstone and the range tombstone over it.
    fn covering_tombstone(&self, key: &ClusteringKey) -> Option<Tombstone> {
        if self.range_tombstones.is_empty() {
            self.partition_tombstone
        } else {
            self.partition_tombstone.max(
                self.range_tombstones
                    .tombstone_at(&Position::At(key.clone())),
            )
        }
    }

    /// Reconciles two mutations of the same partition.
    ///
    /// # Errors
    /// [`Error::PartitionKeyMismatch`] if they are for different partitions.
    pub fn merge(mut self, other: Mutation) -> Result<Mutation, Error> {
        self.apply(other)?;
        Ok(self)
    }

    /// Reconciles any number of mutations, of any partitions and in any
    /// order, into one mutation per partition, sorted by ring order.
    pub fn reconcile_all(mutations: impl IntoIterator<Item = Mutation>) -> Vec<Mutation> {
        let mut by_key: BTreeMap<DecoratedKey, Mutation> = BTreeMap::new();
        for m in mutations {
            match by_key.entry(m.key.clone()) {
                btree_map::Entry::Vacant(v) => {
                    v.insert(m);
                }
                btree_map::Entry::Occupied(mut o) => o.get_mut().apply_same_partition(m),
            }
        }
        by_key.into_values().collect()
    }

    /// Assembles a mutation from parts, checking every timestamp (and
    /// each row's contents) and removing what is shadowed: what a reader
    /// that decodes a whole partition builds (collecting its fragments
    /// gives the same mutation).
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use mutation::{Cell, ClusteringKey, DecoratedKey, Mutation, RangeTombstoneList, Row, Timestamp};
    /// let mut rows = BTreeMap::new();
    /// let row = Row::new().with_cell(0, Cell::live("v", Timestamp::from_micros(1)));
    /// rows.insert(ClusteringKey::new("ck")?, row);
    /// let key = DecoratedKey::from_bytes("pk")?;
    /// let m = Mutation::from_parts(key.clone(), None, Row::new(), rows, RangeTombstoneList::new())?;
    /// let built = Mutation::builder(key).cell("ck", 0, Cell::live("v", Timestamp::from_micros(1))).build()?;
    /// assert_eq!(m, built);
    /// # Ok::<(), mutation::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::TimestampOutOfRange`] or a row's own error (see
    /// [`Row::validate`]). The size limits
    /// ([`limits`](crate::limits)) are not checked: these are parts of
    /// stored data, not of a new write.
    pub fn from_parts(
        key: DecoratedKey,
        partition_tombstone: Option<Tombstone>,
        static_row: Row,
        rows: BTreeMap<ClusteringKey, Row>,
        range_tombstones: RangeTombstoneList,
    ) -> Result<Mutation, Error> {
        if let Some(t) = partition_tombstone {
            t.timestamp.check("partition tombstone")?;
        }
        static_row.validate()?;
        for row in rows.values() {
            row.validate()?;
        }
        for (_, t) in range_tombstones.changes() {
            if let Some(t) = t {
                t.timestamp.check("range tombstone")?;
            }
        }
        let mut m = Mutation {
            key,
            partition_tombstone,
            static_row,
            rows,
            range_tombstones,
        };
        m.canonicalize();
        Ok(m)
    }

    /// Removes everything shadowed (see the type's docs).
    fn canonicalize(&mut self) {
        let pt = self.partition_tombstone;
        self.range_tombstones.compact(pt);
        self.static_row.compact(pt);
        let mut rows = std::mem::take(&mut self.rows);
        rows.retain(|k, row| {
            row.compact(self.covering_tombstone(k));
            !row.is_empty()
        });
        self.rows = rows;
    }

    /// The mutation as a stream of fragments: partition start, static row,
    /// rows and range tombstone changes in clustering order, partition end.
    pub fn into_fragments(self) -> MutationFragments {
        MutationFragments {
            start: Some(Fragment::PartitionStart {
                key: self.key,
                tombstone: self.partition_tombstone,
            }),
            static_row: (!self.static_row.is_empty()).then_some(self.static_row),
            rows: self.rows.into_iter().peekable(),
            changes: self.range_tombstones.into_changes().into_iter().peekable(),
            done: false,
        }
    }

    /// The fragments of a copy of this mutation.
    pub fn fragments(&self) -> Vec<Fragment> {
        self.clone().into_fragments().collect()
    }
}

/// Iterator over the fragments of one mutation; see
/// [`Mutation::into_fragments`].
#[derive(Debug)]
pub struct MutationFragments {
    start: Option<Fragment>,
    static_row: Option<Row>,
    rows: iter::Peekable<btree_map::IntoIter<ClusteringKey, Row>>,
    changes: iter::Peekable<vec::IntoIter<(Position, Option<Tombstone>)>>,
    done: bool,
}

impl Iterator for MutationFragments {
    type Item = Fragment;

    fn next(&mut self) -> Option<Fragment> {
        if let Some(start) = self.start.take() {
            return Some(start);
        }
        if let Some(row) = self.static_row.take() {
            return Some(Fragment::StaticRow(row));
        }
        let row_first = match (self.rows.peek(), self.changes.peek()) {
            (Some((k, _)), Some((p, _))) => PosRef::Key(k.as_bytes(), 0) < p.as_ref(),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => {
                if self.done {
                    return None;
                }
                self.done = true;
                return Some(Fragment::PartitionEnd);
            }
        };
        if row_first {
            self.rows
                .next()
                .map(|(key, row)| Fragment::ClusteringRow { key, row })
        } else {
            self.changes
                .next()
                .map(|(position, tombstone)| Fragment::RangeTombstoneChange {
                    position,
                    tombstone,
                })
        }
    }
}

/// Builds a [`Mutation`] step by step; every check is deferred to
/// [`MutationBuilder::build`], which reports the first problem.
///
/// ```
/// use std::ops::Bound;
/// use mutation::{Cell, DecoratedKey, Mutation, Timestamp, Tombstone};
/// let ts = Timestamp::from_micros(1_000);
/// let m = Mutation::builder(DecoratedKey::from_bytes("pk").unwrap())
///     .cell("ck1", 0, Cell::live("v1", ts))
///     .cell("ck2", 0, Cell::live("v2", ts))
///     .range_tombstone_bounds(Bound::Included("ck2"), Bound::Unbounded, Tombstone::new(ts, 0))
///     .build()
///     .unwrap();
/// // The range tombstone (timestamp >= the cell's) shadows ck2.
/// assert_eq!(m.rows().len(), 1);
/// ```
#[derive(Debug)]
pub struct MutationBuilder {
    key: DecoratedKey,
    partition_tombstone: Option<Tombstone>,
    static_row: Row,
    rows: BTreeMap<ClusteringKey, Row>,
    range_tombstones: Vec<RangeTombstone>,
    error: Option<Error>,
}

impl MutationBuilder {
    /// A builder for the partition `key`.
    pub fn new(key: DecoratedKey) -> Self {
        Self {
            key,
            partition_tombstone: None,
            static_row: Row::new(),
            rows: BTreeMap::new(),
            range_tombstones: Vec::new(),
            error: None,
        }
    }

    fn fail(&mut self, e: Error) {
        if self.error.is_none() {
            self.error = Some(e);
        }
    }

    /// Records `result`'s error, if any. Values are checked as they
    /// arrive: merged first, an out-of-range timestamp (the smallest
    /// possible) would lose to a later valid write and go unreported.
    fn check(&mut self, result: Result<(), Error>) {
        if let Err(e) = result {
            self.fail(e);
        }
    }

    fn row_mut(&mut self, key: impl Into<Bytes>) -> Option<&mut Row> {
        match ClusteringKey::new(key) {
            Ok(k) => Some(self.rows.entry(k).or_default()),
            Err(e) => {
                self.fail(e);
                None
            }
        }
    }

    /// Deletes the partition (the greater tombstone wins if called twice).
    pub fn partition_tombstone(mut self, tombstone: Tombstone) -> Self {
        self.check(tombstone.timestamp.check("partition tombstone"));
        self.partition_tombstone = self.partition_tombstone.max(Some(tombstone));
        self
    }

    /// Writes a static cell.
    pub fn static_cell(mut self, column: ColumnId, cell: Cell) -> Self {
        self.check(cell.validate("cell"));
        self.static_row.apply_cell(column, cell);
        self
    }

    /// Merges a whole static row.
    pub fn static_row(mut self, row: Row) -> Self {
        self.check(row.validate());
        self.static_row.apply(row);
        self
    }

    /// Writes a cell of the row `clustering_key` (bytes or a [`ClusteringKey`]).
    pub fn cell(mut self, clustering_key: impl Into<Bytes>, column: ColumnId, cell: Cell) -> Self {
        self.check(cell.validate("cell"));
        if let Some(row) = self.row_mut(clustering_key) {
            row.apply_cell(column, cell);
        }
        self
    }

    /// Sets the row marker of the row `clustering_key`.
    pub fn row_marker(mut self, clustering_key: impl Into<Bytes>, marker: RowMarker) -> Self {
        self.check(marker.timestamp.check("row marker"));
        if let Some(row) = self.row_mut(clustering_key) {
            row.apply(Row::new().with_marker(marker));
        }
        self
    }

    /// Deletes the row `clustering_key`.
    pub fn row_tombstone(mut self, clustering_key: impl Into<Bytes>, tombstone: Tombstone) -> Self {
        self.check(tombstone.timestamp.check("row tombstone"));
        if let Some(row) = self.row_mut(clustering_key) {
            row.apply(Row::new().with_tombstone(tombstone));
        }
        self
    }

    /// Merges a whole row at `clustering_key`.
    pub fn row(mut self, clustering_key: impl Into<Bytes>, row: Row) -> Self {
        self.check(row.validate());
        if let Some(r) = self.row_mut(clustering_key) {
            r.apply(row);
        }
        self
    }

    /// Deletes the rows in `range`.
    pub fn range_tombstone(mut self, range: ClusteringRange, tombstone: Tombstone) -> Self {
        self.range_tombstones
            .push(RangeTombstone::new(range, tombstone));
        self
    }

    /// Deletes the rows between two bounds given as bytes; a start after the
    /// end makes [`build`](Self::build) fail.
    pub fn range_tombstone_bounds<B: Into<Bytes>>(
        mut self,
        start: Bound<B>,
        end: Bound<B>,
        tombstone: Tombstone,
    ) -> Self {
        let conv = |b: Bound<B>| -> Result<Bound<ClusteringKey>, Error> {
            Ok(match b {
                Bound::Unbounded => Bound::Unbounded,
                Bound::Included(k) => Bound::Included(ClusteringKey::new(k)?),
                Bound::Excluded(k) => Bound::Excluded(ClusteringKey::new(k)?),
            })
        };
        let range = conv(start)
            .and_then(|s| Ok((s, conv(end)?)))
            .and_then(|(s, e)| ClusteringRange::new(s, e));
        match range {
            Ok(r) => self.range_tombstone(r, tombstone),
            Err(e) => {
                self.fail(e);
                self
            }
        }
    }

    /// Checks everything and returns the canonical mutation.
    ///
    /// # Errors
    /// The first problem met: an oversized clustering key, a range whose
    /// start is after its end, a timestamp out of range
    /// ([`Error::TimestampOutOfRange`]), a cell value over
    /// [`MAX_CELL_VALUE_LEN`](crate::limits::MAX_CELL_VALUE_LEN)
    /// ([`Error::CellValueTooLarge`]) or a mutation over
    /// [`MAX_MUTATION_SIZE`](crate::limits::MAX_MUTATION_SIZE)
    /// ([`Error::MutationTooLarge`]).
    pub fn build(self) -> Result<Mutation, Error> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let mut list = RangeTombstoneList::new();
        for rt in &self.range_tombstones {
            rt.tombstone.timestamp.check("range tombstone")?;
            list.apply(&rt.range, rt.tombstone);
        }
        let mutation = Mutation::from_parts(
            self.key,
            self.partition_tombstone,
            self.static_row,
            self.rows,
            list,
        )?;
        crate::limits::check(&mutation)?;
        Ok(mutation)
    }
}

impl From<ClusteringKey> for Bytes {
    fn from(k: ClusteringKey) -> Bytes {
        k.bytes().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Timestamp;

    fn ts(v: i64) -> Timestamp {
        Timestamp::from_micros(v)
    }

    fn dk(s: &str) -> DecoratedKey {
        DecoratedKey::from_bytes(s.as_bytes().to_vec()).unwrap()
    }

    #[test]
    fn builder_reports_bad_input() {
        let err = Mutation::builder(dk("p"))
            .cell(vec![0u8; 70_000], 0, Cell::live("v", ts(1)))
            .build()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "clustering key of 70000 bytes exceeds the 65535-byte limit"
        );
        let err = Mutation::builder(dk("p"))
            .range_tombstone_bounds(
                Bound::Included("b"),
                Bound::Included("a"),
                Tombstone::new(ts(1), 0),
            )
            .build()
            .unwrap_err();
        assert!(matches!(err, Error::ClusteringRangeReversed { .. }));
        let err = Mutation::builder(dk("p"))
            .partition_tombstone(Tombstone::new(ts(i64::MIN), 0))
            .build()
            .unwrap_err();
        assert!(err.to_string().starts_with("partition tombstone timestamp"));
    }

    #[test]
    fn apply_rejects_other_partition_and_leaves_self_unchanged() {
        let mut a = Mutation::builder(dk("a"))
            .cell("c", 1, Cell::live("v", ts(1)))
            .build()
            .unwrap();
        let before = a.clone();
        let b = Mutation::builder(dk("b"))
            .partition_tombstone(Tombstone::new(ts(9), 0))
            .build()
            .unwrap();
        assert!(matches!(
            a.apply(b),
            Err(Error::PartitionKeyMismatch { .. })
        ));
        assert_eq!(a, before);
    }

    #[test]
    fn partition_tombstone_shadows_older_data() {
        let m = Mutation::builder(dk("a"))
            .cell("c1", 1, Cell::live("old", ts(5)))
            .cell("c2", 1, Cell::live("new", ts(6)))
            .static_cell(0, Cell::live("s", ts(5)))
            .range_tombstone_bounds(
                Bound::Unbounded,
                Bound::Excluded("c"),
                Tombstone::new(ts(4), 0),
            )
            .partition_tombstone(Tombstone::new(ts(5), 0))
            .build()
            .unwrap();
        assert_eq!(m.rows().len(), 1);
        assert!(m.static_row().is_none());
        assert!(m.range_tombstones().is_empty());
    }

    #[test]
    fn fragments_are_ordered() {
        let t = Tombstone::new(ts(1), 0);
        let m = Mutation::builder(dk("a"))
            .cell("b", 1, Cell::live("v", ts(5)))
            .cell("d", 1, Cell::live("v", ts(5)))
            .range_tombstone_bounds(Bound::Included("a"), Bound::Included("c"), t)
            .static_cell(0, Cell::live("s", ts(5)))
            .build()
            .unwrap();
        let kinds: Vec<_> = m.fragments().iter().map(Fragment::kind).collect();
        assert_eq!(
            kinds,
            [
                "partition start",
                "static row",
                "range tombstone change",
                "clustering row",
                "range tombstone change",
                "clustering row",
                "partition end"
            ]
        );
    }
}
