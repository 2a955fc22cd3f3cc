//! Range tombstones and their canonical form as a step function over
//! clustering positions.

use crate::{ClusteringRange, Position, Tombstone};

/// A deletion of every clustering row in `range` written at or before
/// `tombstone.timestamp`.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct RangeTombstone {
    /// The clustering interval covered.
    pub range: ClusteringRange,
    /// The deletion.
    pub tombstone: Tombstone,
}

impl RangeTombstone {
    /// A range tombstone.
    pub fn new(range: ClusteringRange, tombstone: Tombstone) -> Self {
        Self { range, tombstone }
    }
}

/// The range tombstones of a partition in canonical form: the effective
/// (greatest) range tombstone as a function of clustering position, stored
/// as its change points. Each change `(p, t)` means "from position `p` on,
/// the effective range tombstone is `t`" until the next change.
///
/// Invariants: positions strictly increase and are never
/// [`Position::At`]; consecutive values differ; the first value is `Some`
/// and the last is `None`. Overlapping tombstones therefore collapse to the
/// greatest one at each point, which makes merging commutative, associative
/// and idempotent. This is also exactly the sequence of
/// [`Fragment::RangeTombstoneChange`](crate::Fragment::RangeTombstoneChange)
/// a partition's stream carries.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct RangeTombstoneList {
    changes: Vec<(Position, Option<Tombstone>)>,
}

impl RangeTombstoneList {
    /// No range tombstones.
    pub fn new() -> Self {
        Self::default()
    }

    /// True if there are no range tombstones.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// The change points.
    pub fn changes(&self) -> &[(Position, Option<Tombstone>)] {
        &self.changes
    }

    /// Applies `tombstone` over `range`, keeping the greater tombstone
    /// wherever ranges overlap. An empty range changes nothing.
    pub fn apply(&mut self, range: &ClusteringRange, tombstone: Tombstone) {
        let (start, end) = (range.start_position(), range.end_position());
        if start >= end {
            return;
        }
        let other = [(start, Some(tombstone)), (end, None)];
        self.changes = merge_max(&self.changes, &other);
    }

    /// Merges another list into this one (pointwise maximum).
    pub fn apply_list(&mut self, other: &RangeTombstoneList) {
        self.apply_list_changed(other);
    }

    /// [`apply_list`](Self::apply_list), telling whether anything changed.
    pub(crate) fn apply_list_changed(&mut self, other: &RangeTombstoneList) -> bool {
        if other.is_empty() {
            return false;
        }
        if self.is_empty() {
            self.changes = other.changes.clone();
            return true;
        }
        let merged = merge_max(&self.changes, &other.changes);
        let changed = merged != self.changes;
        self.changes = merged;
        changed
    }

    /// Drops every part that is not greater than `covering` (the partition
    /// tombstone): such parts delete nothing the partition tombstone does
    /// not already delete.
    pub fn compact(&mut self, covering: Option<Tombstone>) {
        if covering.is_none() || self.is_empty() {
            return;
        }
        let mut out: Vec<(Position, Option<Tombstone>)> = Vec::with_capacity(self.changes.len());
        let mut current = None;
        for (pos, t) in self.changes.drain(..) {
            let t = if t <= covering { None } else { t };
            if t != current {
                out.push((pos, t));
                current = t;
            }
        }
        self.changes = out;
    }

    pub(crate) fn into_changes(self) -> Vec<(Position, Option<Tombstone>)> {
        self.changes
    }

    /// The effective range tombstone at `pos`.
    pub fn tombstone_at(&self, pos: &Position) -> Option<Tombstone> {
        let idx = self.changes.partition_point(|(p, _)| p <= pos);
        if idx == 0 {
            None
        } else {
            self.changes[idx - 1].1
        }
    }

    /// The list as disjoint, sorted range tombstones.
    pub fn to_range_tombstones(&self) -> Vec<RangeTombstone> {
        self.changes
            .windows(2)
            .filter_map(|w| {
                let tombstone = w[0].1?;
                let range = ClusteringRange::from_positions(&w[0].0, &w[1].0).ok()?;
                Some(RangeTombstone { range, tombstone })
            })
            .collect()
    }
}

/// Pointwise maximum of two step functions in change-point form.
fn merge_max(
    a: &[(Position, Option<Tombstone>)],
    b: &[(Position, Option<Tombstone>)],
) -> Vec<(Position, Option<Tombstone>)> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    let (mut ca, mut cb) = (None, None);
    let mut current = None;
    while i < a.len() || j < b.len() {
        let pos = match (a.get(i), b.get(j)) {
            (Some((pa, _)), Some((pb, _))) => pa.min(pb).clone(),
            (Some((pa, _)), None) => pa.clone(),
            (None, Some((pb, _))) => pb.clone(),
            (None, None) => break,
        };
        while a.get(i).is_some_and(|(p, _)| *p == pos) {
            ca = a[i].1;
            i += 1;
        }
        while b.get(j).is_some_and(|(p, _)| *p == pos) {
            cb = b[j].1;
            j += 1;
        }
        let v = ca.max(cb);
        if v != current {
            out.push((pos, v));
            current = v;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::ops::Bound;

    use super::*;
    use crate::{ClusteringKey, Timestamp};

    fn ck(s: &str) -> ClusteringKey {
        ClusteringKey::new(s.as_bytes().to_vec()).unwrap()
    }

    fn t(v: i64) -> Tombstone {
        Tombstone::new(Timestamp::from_micros(v), 0)
    }

    fn range(a: &str, b: &str) -> ClusteringRange {
        ClusteringRange::new(Bound::Included(ck(a)), Bound::Included(ck(b))).unwrap()
    }

    #[test]
    fn overlapping_ranges_keep_the_greater_tombstone() {
        let mut l = RangeTombstoneList::new();
        l.apply(&range("b", "d"), t(1));
        l.apply(&range("c", "f"), t(2));
        assert_eq!(l.tombstone_at(&Position::At(ck("a"))), None);
        assert_eq!(l.tombstone_at(&Position::At(ck("b"))), Some(t(1)));
        assert_eq!(l.tombstone_at(&Position::At(ck("c"))), Some(t(2)));
        assert_eq!(l.tombstone_at(&Position::At(ck("f"))), Some(t(2)));
        assert_eq!(l.tombstone_at(&Position::At(ck("g"))), None);
        let rts = l.to_range_tombstones();
        assert_eq!(rts.len(), 2);
        assert_eq!(rts[0].range.end(), &Bound::Excluded(ck("c")));
    }

    #[test]
    fn merge_is_idempotent_and_commutative() {
        let mut a = RangeTombstoneList::new();
        a.apply(&range("b", "d"), t(1));
        let mut b = RangeTombstoneList::new();
        b.apply(&range("a", "c"), t(1));
        let mut ab = a.clone();
        ab.apply_list(&b);
        let mut ba = b.clone();
        ba.apply_list(&a);
        assert_eq!(ab, ba);
        // Equal adjacent tombstones coalesce into one range [a, d].
        assert_eq!(ab.changes().len(), 2);
        let mut aa = a.clone();
        aa.apply_list(&a);
        assert_eq!(aa, a);
    }

    #[test]
    fn compact_drops_parts_under_the_partition_tombstone() {
        let mut l = RangeTombstoneList::new();
        l.apply(&range("b", "d"), t(1));
        l.apply(&range("c", "f"), t(3));
        l.compact(Some(t(2)));
        assert_eq!(l.tombstone_at(&Position::At(ck("b"))), None);
        assert_eq!(l.tombstone_at(&Position::At(ck("c"))), Some(t(3)));
        assert_eq!(l.changes().len(), 2);
    }
}
