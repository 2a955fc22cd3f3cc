//! Readers over in-memory data, and collecting a stream back into
//! mutations.

use std::collections::{BTreeMap, VecDeque};

use crate::{
    ClusteringRange, Error, Fragment, FragmentReader, Mutation, MutationFragments, PartitionRange,
    Position, RangeTombstoneList, Row, StreamValidator, Tombstone,
};

/// Builds a reader over mutations given in any order: mutations of the same
/// partition are reconciled, partitions come out in ring order. Lets sstable
/// tests produce streams without a memtable.
///
/// ```
/// use mutation::{from_mutations, to_mutations, Cell, DecoratedKey, Mutation, Timestamp};
/// let m = |k: &str, v: &str, ts| {
///     Mutation::builder(DecoratedKey::from_bytes(k.to_owned()).unwrap())
///         .cell("ck", 0, Cell::live(v.to_owned(), Timestamp::from_micros(ts)))
///         .build()
///         .unwrap()
/// };
/// let mut reader = from_mutations(vec![m("b", "old", 1), m("a", "x", 1), m("b", "new", 2)]);
/// let back = to_mutations(&mut reader)?;
/// assert_eq!(back, Mutation::reconcile_all(vec![m("a", "x", 1), m("b", "new", 2)]));
/// # Ok::<(), mutation::Error>(())
/// ```
pub fn from_mutations(mutations: impl IntoIterator<Item = Mutation>) -> MutationsReader {
    MutationsReader {
        pending: Mutation::reconcile_all(mutations).into(),
        current: None,
        range: PartitionRange::full(),
    }
}

/// The reader returned by [`from_mutations`].
#[derive(Debug)]
pub struct MutationsReader {
    pending: VecDeque<Mutation>,
    current: Option<MutationFragments>,
    range: PartitionRange,
}

impl MutationsReader {
    /// Number of partitions not yet started.
    pub fn remaining_partitions(&self) -> usize {
        self.pending.len()
    }
}

impl FragmentReader for MutationsReader {
    fn next(&mut self) -> Result<Option<Fragment>, Error> {
        loop {
            if let Some(cur) = &mut self.current {
                match cur.next() {
                    Some(Fragment::PartitionEnd) => {
                        self.current = None;
                        return Ok(Some(Fragment::PartitionEnd));
                    }
                    Some(f) => return Ok(Some(f)),
                    None => self.current = None,
                }
            }
            let Some(front) = self.pending.front() else {
                return Ok(None);
            };
            if self.range.is_after(front.key()) {
                return Ok(None);
            }
            if let Some(m) = self.pending.pop_front()
                && !self.range.is_before(m.key())
            {
                self.current = Some(m.into_fragments());
            }
        }
    }

    fn fast_forward_to(&mut self, range: PartitionRange) -> Result<(), Error> {
        self.current = None;
        self.range = range;
        Ok(())
    }

    fn next_partition(&mut self) -> Result<(), Error> {
        self.current = None;
        Ok(())
    }
}

/// A reader over a vector of fragments, produced as given (it does not
/// check them; wrap it in a [`crate::ValidatingReader`] for that). Useful
/// to replay a recorded stream and as a benchmark baseline.
#[derive(Debug)]
pub struct FragmentsReader {
    fragments: VecDeque<Fragment>,
    in_partition: bool,
    range: PartitionRange,
}

impl FragmentsReader {
    /// A reader producing `fragments`.
    pub fn new(fragments: impl IntoIterator<Item = Fragment>) -> Self {
        Self {
            fragments: fragments.into_iter().collect(),
            in_partition: false,
            range: PartitionRange::full(),
        }
    }

    /// Drops fragments up to and including the next partition end.
    fn skip_partition(&mut self) {
        while let Some(f) = self.fragments.pop_front() {
            if matches!(f, Fragment::PartitionEnd) {
                break;
            }
        }
        self.in_partition = false;
    }
}

impl FragmentReader for FragmentsReader {
    fn next(&mut self) -> Result<Option<Fragment>, Error> {
        loop {
            if !self.in_partition
                && let Some(Fragment::PartitionStart { key, .. }) = self.fragments.front()
            {
                if self.range.is_after(key) {
                    return Ok(None);
                }
                if self.range.is_before(key) {
                    self.skip_partition();
                    continue;
                }
            }
            let f = self.fragments.pop_front();
            match &f {
                Some(Fragment::PartitionStart { .. }) => self.in_partition = true,
                Some(Fragment::PartitionEnd) => self.in_partition = false,
                _ => {}
            }
            return Ok(f);
        }
    }

    fn fast_forward_to(&mut self, range: PartitionRange) -> Result<(), Error> {
        if self.in_partition {
            self.skip_partition();
        }
        self.range = range;
        Ok(())
    }

    fn next_partition(&mut self) -> Result<(), Error> {
        if self.in_partition {
            self.skip_partition();
        }
        Ok(())
    }
}

/// A partition being collected by [`to_mutations`].
struct Collecting {
    key: crate::DecoratedKey,
    tombstone: Option<Tombstone>,
    static_row: Row,
    rows: BTreeMap<crate::ClusteringKey, Row>,
    range_tombstones: RangeTombstoneList,
    open: Option<(Position, Tombstone)>,
}

impl Collecting {
    /// Takes the next fragment of a validated stream: collects it into
    /// `current`, and hands the partition back whole at its end.
    fn take(
        current: &mut Option<Collecting>,
        fragment: Fragment,
    ) -> Result<Option<Mutation>, Error> {
        match fragment {
            Fragment::PartitionStart { key, tombstone } => {
                *current = Some(Collecting {
                    key,
                    tombstone,
                    static_row: Row::new(),
                    rows: BTreeMap::new(),
                    range_tombstones: RangeTombstoneList::new(),
                    open: None,
                });
            }
            Fragment::StaticRow(row) => {
                if let Some(c) = current {
                    c.static_row.apply(row);
                }
            }
            Fragment::ClusteringRow { key, row } => {
                if let Some(c) = current {
                    c.rows.entry(key).or_default().apply(row);
                }
            }
            Fragment::RangeTombstoneChange {
                position,
                tombstone,
            } => {
                if let Some(c) = current {
                    if let Some((start, t)) = c.open.take() {
                        let range = ClusteringRange::from_positions(&start, &position)?;
                        c.range_tombstones.apply(&range, t);
                    }
                    c.open = tombstone.map(|t| (position, t));
                }
            }
            Fragment::PartitionEnd => {
                if let Some(c) = current.take() {
                    return Mutation::from_parts(
                        c.key,
                        c.tombstone,
                        c.static_row,
                        c.rows,
                        c.range_tombstones,
                    )
                    .map(Some);
                }
            }
        }
        Ok(None)
    }
}

/// Reads a whole stream and collects it into one (canonical) mutation per
/// partition, in stream order. The stream is validated on the way.
///
/// # Errors
/// The reader's errors, or [`Error::InvalidStream`] for a stream that
/// breaks the ordering rules.
pub fn to_mutations<R: FragmentReader + ?Sized>(reader: &mut R) -> Result<Vec<Mutation>, Error> {
    let mut validator = StreamValidator::new();
    let mut out = Vec::new();
    let mut current: Option<Collecting> = None;
    while let Some(fragment) = reader.next()? {
        validator.check(&fragment)?;
        if let Some(m) = Collecting::take(&mut current, fragment)? {
            out.push(m);
        }
    }
    validator.finish()?;
    Ok(out)
}

/// Reads the next partition of `reader` and collects it into one
/// (canonical) mutation; `None` at the end of the stream. To be called
/// between partitions (before the first fragment, or right after a
/// `PartitionEnd`). The partition is validated on the way (its own
/// fragments: the order of partitions is left to the caller). This is
/// [`FragmentReader::next_mutation`]'s default.
///
/// ```
/// use mutation::{collect_partition, from_mutations, Cell, DecoratedKey, Mutation, Timestamp};
/// let m = |k: &str| {
///     Mutation::builder(DecoratedKey::from_bytes(k.to_owned()).unwrap())
///         .cell("ck", 0, Cell::live("v", Timestamp::from_micros(1)))
///         .build()
///         .unwrap()
/// };
/// let mut reader = from_mutations(vec![m("a"), m("b")]);
/// let first = collect_partition(&mut reader)?.expect("a partition");
/// let second = collect_partition(&mut reader)?.expect("another");
/// assert_eq!(Mutation::reconcile_all(vec![first, second]), Mutation::reconcile_all(vec![m("a"), m("b")]));
/// assert!(collect_partition(&mut reader)?.is_none());
/// # Ok::<(), mutation::Error>(())
/// ```
///
/// # Errors
/// The reader's errors, or [`Error::InvalidStream`] for a partition that
/// breaks the ordering rules, one that does not start with its
/// `PartitionStart` (a call in the middle of a partition), or a stream
/// that ends inside a partition.
pub fn collect_partition<R: FragmentReader + ?Sized>(
    reader: &mut R,
) -> Result<Option<Mutation>, Error> {
    let mut validator = StreamValidator::new();
    let mut current: Option<Collecting> = None;
    while let Some(fragment) = reader.next()? {
        validator.check(&fragment)?;
        if let Some(m) = Collecting::take(&mut current, fragment)? {
            return Ok(Some(m));
        }
    }
    validator.finish()?;
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Bound, Cell, DecoratedKey, RingPosition, Timestamp};

    fn m(k: &str, v: &str) -> Mutation {
        Mutation::builder(DecoratedKey::from_bytes(k.as_bytes().to_vec()).unwrap())
            .cell(
                "c",
                0,
                Cell::live(v.as_bytes().to_vec(), Timestamp::from_micros(1)),
            )
            .build()
            .unwrap()
    }

    fn keys(r: &mut dyn FragmentReader) -> Vec<DecoratedKey> {
        let mut out = Vec::new();
        while let Some(f) = r.next().unwrap() {
            if let Fragment::PartitionStart { key, .. } = f {
                out.push(key);
            }
        }
        out
    }

    #[test]
    fn fast_forward_and_next_partition() {
        let ms = Mutation::reconcile_all(["a", "b", "c", "d", "e"].map(|k| m(k, "v")));
        let sorted: Vec<_> = ms.iter().map(|m| m.key().clone()).collect();
        let range = PartitionRange::new(
            Bound::Included(RingPosition::Key(sorted[1].clone())),
            Bound::Excluded(RingPosition::Key(sorted[3].clone())),
        )
        .unwrap();
        let mut r = from_mutations(ms.clone());
        r.fast_forward_to(range.clone()).unwrap();
        assert_eq!(keys(&mut r), sorted[1..3].to_vec());
        r.fast_forward_to(PartitionRange::full()).unwrap();
        assert_eq!(keys(&mut r), sorted[3..].to_vec());

        let frags: Vec<Fragment> = ms.iter().flat_map(Mutation::fragments).collect();
        let mut fr = FragmentsReader::new(frags.clone());
        fr.fast_forward_to(range).unwrap();
        assert_eq!(keys(&mut fr), sorted[1..3].to_vec());

        let mut fr = FragmentsReader::new(frags);
        assert!(matches!(
            fr.next().unwrap(),
            Some(Fragment::PartitionStart { .. })
        ));
        fr.next_partition().unwrap();
        fr.next_partition().unwrap(); // between partitions: no-op
        assert_eq!(keys(&mut fr), sorted[1..].to_vec());
    }

    #[test]
    fn to_mutations_rejects_invalid_stream() {
        let mut fr = FragmentsReader::new(vec![Fragment::PartitionEnd]);
        assert!(matches!(
            to_mutations(&mut fr),
            Err(Error::InvalidStream { index: 0, .. })
        ));
    }

    #[test]
    fn next_mutation_hands_over_one_partition_at_a_time() {
        let ms = Mutation::reconcile_all(["a", "b", "c"].map(|k| m(k, "v")));
        let frags: Vec<Fragment> = ms.iter().flat_map(Mutation::fragments).collect();
        let mut fr = FragmentsReader::new(frags.clone());
        let mut got = Vec::new();
        while let Some(one) = fr.next_mutation().unwrap() {
            got.push(one);
        }
        assert_eq!(got, ms);
        // Mixed with streaming: the partition after the one read whole.
        let mut fr = FragmentsReader::new(frags.clone());
        assert_eq!(fr.next_mutation().unwrap().as_ref(), Some(&ms[0]));
        assert_eq!(keys(&mut fr), [ms[1].key().clone(), ms[2].key().clone()]);
        // Through a box, as the replica holds its readers.
        let mut boxed: Box<dyn FragmentReader> = Box::new(FragmentsReader::new(frags));
        assert_eq!(boxed.next_mutation().unwrap().as_ref(), Some(&ms[0]));
    }

    #[test]
    fn next_mutation_rejects_a_call_inside_a_partition_and_a_cut_stream() {
        let frags: Vec<Fragment> = m("a", "v").fragments();
        let mut fr = FragmentsReader::new(frags.clone());
        fr.next().unwrap();
        assert!(matches!(
            fr.next_mutation(),
            Err(Error::InvalidStream { index: 0, .. })
        ));
        let cut = frags[..frags.len() - 1].to_vec();
        let mut fr = FragmentsReader::new(cut);
        assert!(matches!(
            fr.next_mutation(),
            Err(Error::InvalidStream { .. })
        ));
        let mut empty = FragmentsReader::new(Vec::new());
        assert_eq!(empty.next_mutation().unwrap(), None);
    }
}
