//! Partitions as the cache handles them: a [`Mutation`] restricted to a
//! clustering slice, and one partition collected from a fragment stream.

use std::collections::VecDeque;
use std::ops::Bound;

use mutation::{
    ClusteringRange, DecoratedKey, Fragment, FragmentReader, Mutation, PartitionRange, Position,
    RangeTombstoneList, to_mutations,
};

/// The fragments a reader with `slice` yields for `m`: the partition
/// tombstone and static row, the rows inside the slice, and the range
/// tombstones clipped to it.
pub(crate) fn slice_fragments(m: Mutation, slice: &ClusteringRange) -> VecDeque<Fragment> {
    let (s, e) = (slice.start_position(), slice.end_position());
    let mut clipped = RangeTombstoneList::new();
    for rt in m.range_tombstones().to_range_tombstones() {
        let start = rt.range.start_position().max(s.clone());
        let end = rt.range.end_position().min(e.clone());
        if start < end
            && let Ok(range) = ClusteringRange::from_positions(&start, &end)
        {
            clipped.apply(&range, rt.tombstone);
        }
    }
    let changes = clipped.changes();
    let mut change = 0;
    let mut out = VecDeque::new();
    for f in m.into_fragments() {
        match f {
            Fragment::RangeTombstoneChange { .. } => {}
            Fragment::ClusteringRow { ref key, .. } => {
                if !slice.contains(key) {
                    continue;
                }
                let at = Position::At(key.clone());
                while change < changes.len() && changes[change].0 < at {
                    push_change(&mut out, &changes[change]);
                    change += 1;
                }
                out.push_back(f);
            }
            Fragment::PartitionEnd => {
                for c in &changes[change..] {
                    push_change(&mut out, c);
                }
                change = changes.len();
                out.push_back(f);
            }
            other => out.push_back(other),
        }
    }
    out
}

fn push_change(
    out: &mut VecDeque<Fragment>,
    (position, tombstone): &(Position, Option<mutation::Tombstone>),
) {
    out.push_back(Fragment::RangeTombstoneChange {
        position: position.clone(),
        tombstone: *tombstone,
    });
}

/// Whether `outer` holds every clustering position of `inner`.
pub(crate) fn slice_covers(outer: &ClusteringRange, inner: &ClusteringRange) -> bool {
    // A partition cached whole (the usual case) covers every slice; the
    // positions below are built (keys cloned) only for a partial one.
    is_full(outer)
        || inner.is_empty()
        || (outer.start_position() <= inner.start_position()
            && inner.end_position() <= outer.end_position())
}

/// The smallest range holding both `a` and `b` (what lies between them
/// too).
pub(crate) fn slice_hull(a: &ClusteringRange, b: &ClusteringRange) -> Option<ClusteringRange> {
    let start = a.start_position().min(b.start_position());
    let end = a.end_position().max(b.end_position());
    ClusteringRange::from_positions(&start, &end).ok()
}

/// Reads the next whole partition from `reader`, or `None` at the end of
/// the stream. The partition is validated and reconciled on the way.
pub(crate) fn next_partition(
    reader: &mut dyn FragmentReader,
) -> Result<Option<Mutation>, mutation::Error> {
    next_wanted_partition(reader, |_| true, &mut 0)
}

/// The next partition of `reader` whose key `wanted` accepts, collected
/// into one mutation; `None` at the end of the stream. A partition whose
/// key it refuses is skipped with [`FragmentReader::next_partition`], its
/// rows never read (nor copied out of the source), and counted in
/// `skipped`.
pub(crate) fn next_wanted_partition(
    reader: &mut dyn FragmentReader,
    mut wanted: impl FnMut(&DecoratedKey) -> bool,
    skipped: &mut usize,
) -> Result<Option<Mutation>, mutation::Error> {
    loop {
        let Some(first) = reader.next()? else {
            return Ok(None);
        };
        if let Fragment::PartitionStart { key, .. } = &first
            && !wanted(key)
        {
            *skipped += 1;
            reader.next_partition()?;
            continue;
        }
        // Anything but a partition start here is an invalid stream, which
        // collecting reports.
        let mut one = OnePartition {
            inner: reader,
            first: Some(first),
            done: false,
        };
        let mut all = to_mutations(&mut one)?;
        return Ok(all.pop());
    }
}

/// A reader that ends after the first partition of another (whose first
/// fragment was read already: `first`).
struct OnePartition<'a> {
    inner: &'a mut dyn FragmentReader,
    first: Option<Fragment>,
    done: bool,
}

impl FragmentReader for OnePartition<'_> {
    fn next(&mut self) -> Result<Option<Fragment>, mutation::Error> {
        if self.done {
            return Ok(None);
        }
        let f = match self.first.take() {
            Some(f) => Some(f),
            None => self.inner.next()?,
        };
        if matches!(f, None | Some(Fragment::PartitionEnd)) {
            self.done = true;
        }
        Ok(f)
    }

    fn fast_forward_to(&mut self, range: PartitionRange) -> Result<(), mutation::Error> {
        self.inner.fast_forward_to(range)
    }

    fn next_partition(&mut self) -> Result<(), mutation::Error> {
        self.inner.next_partition()
    }
}

/// Whether `slice` is the whole partition.
pub(crate) fn is_full(slice: &ClusteringRange) -> bool {
    matches!(slice.start(), Bound::Unbounded) && matches!(slice.end(), Bound::Unbounded)
}
