//! Restricting one partition's fragments to a clustering range.
//!
//! The partition start and static row always pass. Clustering rows pass
//! when the range contains them. Range tombstones are clipped to the
//! range: a tombstone in force at the range start is re-opened there
//! (`RangeTombstoneChange` at the start position), changes inside the
//! range pass, and a tombstone still in force at the range end is closed
//! there. Fragments past the end are dropped.

use mutation::{ClusteringRange, Fragment, Position, Tombstone};

/// Clips one partition's fragments at a time; [`Slicer::reset`] between
/// partitions.
#[derive(Debug, Clone)]
pub(crate) struct Slicer {
    start: Position,
    end: Position,
    /// Tombstone in force in the input.
    active: Option<Tombstone>,
    /// Tombstone in force in the output.
    emitted: Option<Tombstone>,
    opened: bool,
    finished: bool,
    /// The range holds no position: nothing clustering is emitted.
    empty: bool,
}

impl Slicer {
    /// A slicer for `range`.
    pub(crate) fn new(range: &ClusteringRange) -> Self {
        let (start, end) = (range.start_position(), range.end_position());
        Slicer {
            empty: start >= end,
            start,
            end,
            active: None,
            emitted: None,
            opened: false,
            finished: false,
        }
    }

    /// Starts a new partition whose input is in `active` at the point
    /// where feeding resumes (used when decoding starts mid-partition).
    pub(crate) fn reset(&mut self, active: Option<Tombstone>) {
        self.active = active;
        self.emitted = None;
        self.opened = false;
        self.finished = false;
    }

    /// True once the range end was passed; remaining clustering fragments
    /// of the partition can be skipped.
    pub(crate) fn finished(&self) -> bool {
        self.finished
    }

    /// The range start, for seeking.
    pub(crate) fn start(&self) -> &Position {
        &self.start
    }

    fn open(&mut self, out: &mut Vec<Fragment>) {
        if !self.opened && !self.empty {
            self.opened = true;
            if self.active.is_some() {
                out.push(Fragment::RangeTombstoneChange {
                    position: self.start.clone(),
                    tombstone: self.active,
                });
                self.emitted = self.active;
            }
        }
    }

    fn finish(&mut self, out: &mut Vec<Fragment>) {
        if self.finished {
            return;
        }
        self.open(out);
        if self.emitted.is_some() {
            out.push(Fragment::RangeTombstoneChange {
                position: self.end.clone(),
                tombstone: None,
            });
            self.emitted = None;
        }
        self.finished = true;
    }

    /// Feeds one fragment; appends the fragments to emit to `out`.
    pub(crate) fn feed(&mut self, f: Fragment, out: &mut Vec<Fragment>) {
        match f {
            Fragment::PartitionStart { .. } | Fragment::StaticRow(_) => out.push(f),
            Fragment::PartitionEnd => {
                self.finish(out);
                out.push(f);
            }
            Fragment::ClusteringRow { ref key, .. } => {
                if self.finished {
                    return;
                }
                let pos = Position::At(key.clone());
                if pos < self.start {
                    return;
                }
                if pos >= self.end {
                    self.finish(out);
                    return;
                }
                self.open(out);
                out.push(f);
            }
            Fragment::RangeTombstoneChange {
                position,
                tombstone,
            } => {
                if self.finished {
                    return;
                }
                if position <= self.start {
                    self.active = tombstone;
                } else if position < self.end {
                    self.open(out);
                    self.active = tombstone;
                    // Passed even when it changes nothing: the stream read
                    // back must equal the (valid) stream written.
                    out.push(Fragment::RangeTombstoneChange {
                        position,
                        tombstone,
                    });
                    self.emitted = tombstone;
                } else {
                    self.finish(out);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mutation::{ClusteringKey, DecoratedKey, Row, Timestamp};
    use std::ops::Bound;

    fn ck(s: &str) -> ClusteringKey {
        ClusteringKey::new(s.as_bytes().to_vec()).unwrap()
    }

    fn row(s: &str) -> Fragment {
        Fragment::ClusteringRow {
            key: ck(s),
            row: Row::new(),
        }
    }

    fn rtc(p: Position, t: Option<Tombstone>) -> Fragment {
        Fragment::RangeTombstoneChange {
            position: p,
            tombstone: t,
        }
    }

    #[test]
    fn clips_rows_and_reopens_and_closes_tombstones() {
        let t = Some(Tombstone::new(Timestamp::from_micros(3), 0));
        let input = vec![
            Fragment::PartitionStart {
                key: DecoratedKey::from_bytes("p").unwrap(),
                tombstone: None,
            },
            row("a"),
            rtc(Position::Before(ck("b")), t),
            row("b"),
            row("c"),
            row("d"),
            rtc(Position::After(ck("d")), None),
            row("e"),
            Fragment::PartitionEnd,
        ];
        let range =
            ClusteringRange::new(Bound::Included(ck("c")), Bound::Included(ck("c"))).unwrap();
        let mut s = Slicer::new(&range);
        let mut out = Vec::new();
        for f in input.clone() {
            s.feed(f, &mut out);
        }
        assert_eq!(
            out,
            vec![
                input[0].clone(),
                rtc(Position::Before(ck("c")), t),
                row("c"),
                rtc(Position::After(ck("c")), None),
                Fragment::PartitionEnd,
            ]
        );
        // The full range passes everything through unchanged.
        let mut s = Slicer::new(&ClusteringRange::full());
        let mut out = Vec::new();
        for f in input.clone() {
            s.feed(f, &mut out);
        }
        assert_eq!(out, input);
        // An empty range keeps only the partition start and end.
        let empty = ClusteringRange::new(Bound::Excluded(ck("c")), Bound::Excluded(ck("c")))
            .unwrap_or_else(|_| {
                ClusteringRange::new(Bound::Included(ck("c")), Bound::Excluded(ck("c"))).unwrap()
            });
        let mut s = Slicer::new(&empty);
        let mut out = Vec::new();
        for f in input.clone() {
            s.feed(f, &mut out);
        }
        assert_eq!(out, vec![input[0].clone(), Fragment::PartitionEnd]);
    }
}
