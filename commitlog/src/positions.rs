//! [`ReplayPositionSet`]: exactly which log entries a memtable holds.

use crate::ReplayPosition;

/// The log entries one holder (a memtable) holds, counted per segment: the
/// set a flush hands to [`CommitLog::discard_flushed`](crate::CommitLog::discard_flushed)
/// once the holder's data is durable elsewhere (ScyllaDB's `rp_set`).
///
/// The log counts, per segment and table, the entries appended and not yet
/// discarded; a segment is free for a table once every entry of it was
/// handed back. Nothing is assumed about the order in which entries reach
/// their holders: an entry appended before another may land in a newer
/// memtable (a writer that raced a flush), and the older memtable's flush
/// then releases only what it holds.
///
/// ```
/// use commitlog::{ReplayPosition, ReplayPositionSet};
///
/// let mut set = ReplayPositionSet::new();
/// set.insert(ReplayPosition::new(3, 24));
/// set.insert(ReplayPosition::new(3, 90));
/// set.insert(ReplayPosition::new(2, 500)); // out of order is fine
/// assert_eq!(set.len(), 3);
/// assert_eq!(set.segments().collect::<Vec<_>>(), vec![(2, 1), (3, 2)]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplayPositionSet {
    /// (segment id, entries), sorted by segment id. Most inserts add to the
    /// last element (entries arrive roughly in log order).
    counts: Vec<(u64, u64)>,
    entries: u64,
}

impl ReplayPositionSet {
    /// An empty set.
    pub const fn new() -> Self {
        Self {
            counts: Vec::new(),
            entries: 0,
        }
    }

    /// Adds the entry at `position`.
    pub fn insert(&mut self, position: ReplayPosition) {
        self.entries += 1;
        let segment = position.segment;
        if let Some(last) = self.counts.last_mut() {
            if last.0 == segment {
                last.1 += 1;
                return;
            }
            if last.0 < segment {
                self.counts.push((segment, 1));
                return;
            }
        }
        match self.counts.binary_search_by_key(&segment, |&(s, _)| s) {
            Ok(i) => self.counts[i].1 += 1,
            Err(i) => self.counts.insert(i, (segment, 1)),
        }
    }

    /// Adds every entry of `other`.
    pub fn extend_from(&mut self, other: &ReplayPositionSet) {
        for &(segment, n) in &other.counts {
            match self.counts.binary_search_by_key(&segment, |&(s, _)| s) {
                Ok(i) => self.counts[i].1 += n,
                Err(i) => self.counts.insert(i, (segment, n)),
            }
        }
        self.entries += other.entries;
    }

    /// The number of entries.
    pub fn len(&self) -> u64 {
        self.entries
    }

    /// True if the set holds no entry.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// (segment id, entries in it), oldest segment first.
    pub fn segments(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.counts.iter().copied()
    }
}

impl From<ReplayPosition> for ReplayPositionSet {
    fn from(position: ReplayPosition) -> Self {
        let mut set = Self::new();
        set.insert(position);
        set
    }
}

impl FromIterator<ReplayPosition> for ReplayPositionSet {
    fn from_iter<I: IntoIterator<Item = ReplayPosition>>(iter: I) -> Self {
        let mut set = Self::new();
        for p in iter {
            set.insert(p);
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_segment_in_any_order() {
        let positions = [(5, 1), (5, 2), (7, 0), (4, 9), (5, 3), (7, 1), (6, 0)];
        let set: ReplayPositionSet = positions
            .iter()
            .map(|&(s, o)| ReplayPosition::new(s, o))
            .collect();
        assert_eq!(set.len(), 7);
        assert_eq!(
            set.segments().collect::<Vec<_>>(),
            vec![(4, 1), (5, 3), (6, 1), (7, 2)]
        );
        let mut merged = ReplayPositionSet::from(ReplayPosition::new(6, 4));
        merged.extend_from(&set);
        assert_eq!(merged.len(), 8);
        assert_eq!(
            merged.segments().collect::<Vec<_>>(),
            vec![(4, 1), (5, 3), (6, 2), (7, 2)]
        );
        assert!(ReplayPositionSet::new().is_empty());
    }
}
