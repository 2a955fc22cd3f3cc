//! Merging any number of fragment streams into one reconciled stream.

use std::cmp::Ordering;

use crate::range::PosRef;
use crate::{DecoratedKey, Error, Fragment, FragmentReader, PartitionRange, Row, Tombstone};

/// One input of a [`MergingReader`].
#[derive(Debug)]
struct Source<R> {
    reader: R,
    /// A fragment read from `reader` but not consumed yet.
    peeked: Option<Fragment>,
    /// `reader` returned `None` for its current range.
    exhausted: bool,
    /// The range tombstone in effect in this source's current partition.
    rt: Option<Tombstone>,
    /// A fast-forward to apply once the partition whose start sits in
    /// `peeked` has been consumed (forwarding now would lose it).
    pending_ff: Option<PartitionRange>,
}

impl<R: FragmentReader> Source<R> {
    fn fill(&mut self) -> Result<(), Error> {
        if self.peeked.is_none() && !self.exhausted {
            match self.reader.next()? {
                Some(f) => self.peeked = Some(f),
                None => self.exhausted = true,
            }
        }
        Ok(())
    }

    fn peeked_pos(&self) -> Option<PosRef<'_>> {
        self.peeked.as_ref().and_then(Fragment::pos_ref)
    }

    /// The source is now between partitions: apply a deferred fast-forward.
    fn between_partitions(&mut self) -> Result<(), Error> {
        self.rt = None;
        if let Some(range) = self.pending_ff.take() {
            self.exhausted = false;
            self.reader.fast_forward_to(range)?;
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Between,
    Static,
    Clustering,
}

/// Merges the streams of any number of readers into one stream in which
/// every partition appears once, with everything reconciled as
/// [`Mutation::apply`](crate::Mutation::apply) would: partition tombstones
/// and rows are merged, shadowed data is dropped, and range tombstones are
/// emitted as the *effective* range tombstone over clustering positions
/// (the greatest of the sources' current range tombstones, when it is
/// greater than the partition tombstone), one change each time it changes.
///
/// The result equals the stream of the reconciled mutations, whatever the
/// split of the data between the sources. Sources must produce valid
/// streams (wrap them in [`crate::ValidatingReader`] if unsure); a source
/// fragment that cannot be placed is reported as
/// [`Error::InvalidStream`].
///
/// ```
/// use mutation::{from_mutations, to_mutations, Cell, DecoratedKey, MergingReader, Mutation, Timestamp};
/// let key = DecoratedKey::from_bytes("pk")?;
/// let v = |val: &str, ts| {
///     Mutation::builder(key.clone())
///         .cell("ck", 7, Cell::live(val.to_owned(), Timestamp::from_micros(ts)))
///         .build()
/// };
/// let (a, b) = (v("old", 1)?, v("new", 2)?);
/// let mut merged = MergingReader::new(vec![from_mutations([a.clone()]), from_mutations([b.clone()])]);
/// assert_eq!(to_mutations(&mut merged)?, vec![a.merge(b)?]);
/// # Ok::<(), mutation::Error>(())
/// ```
#[derive(Debug)]
pub struct MergingReader<R> {
    sources: Vec<Source<R>>,
    /// Sources taking part in the current partition.
    active: Vec<usize>,
    phase: Phase,
    key: Option<DecoratedKey>,
    partition_tombstone: Option<Tombstone>,
    /// The effective range tombstone last emitted in this partition.
    emitted_rt: Option<Tombstone>,
    range: PartitionRange,
    /// Fragments produced so far (for error reports).
    produced: u64,
    /// Scratch list of the sources at the smallest position.
    tied: Vec<usize>,
}

impl<R: FragmentReader> MergingReader<R> {
    /// Merges `readers`.
    pub fn new(readers: impl IntoIterator<Item = R>) -> Self {
        Self {
            sources: readers
                .into_iter()
                .map(|reader| Source {
                    reader,
                    peeked: None,
                    exhausted: false,
                    rt: None,
                    pending_ff: None,
                })
                .collect(),
            active: Vec::new(),
            phase: Phase::Between,
            key: None,
            partition_tombstone: None,
            emitted_rt: None,
            range: PartitionRange::full(),
            produced: 0,
            tied: Vec::new(),
        }
    }

    /// Number of sources.
    pub fn source_count(&self) -> usize {
        self.sources.len()
    }

    fn bad_source(&self, source: usize, what: &str) -> Error {
        Error::InvalidStream {
            index: self.produced,
            partition: self
                .key
                .as_ref()
                .map_or_else(|| "none".to_owned(), ToString::to_string),
            detail: format!("merging reader source #{source} {what}"),
        }
    }

    fn start_partition(&mut self) -> Result<Option<Fragment>, Error> {
        loop {
            let mut min: Option<usize> = None;
            for i in 0..self.sources.len() {
                self.sources[i].fill()?;
                match &self.sources[i].peeked {
                    None => {}
                    Some(Fragment::PartitionStart { key, .. }) => {
                        let better = match min.and_then(|m| self.sources[m].peeked.as_ref()) {
                            Some(Fragment::PartitionStart { key: best, .. }) => key < best,
                            _ => true,
                        };
                        if better {
                            min = Some(i);
                        }
                    }
                    Some(other) => {
                        let what = format!("produced a {} between partitions", other.kind());
                        return Err(self.bad_source(i, &what));
                    }
                }
            }
            let Some(m) = min else {
                return Ok(None);
            };
            let key = match &self.sources[m].peeked {
                Some(Fragment::PartitionStart { key, .. }) => key.clone(),
                _ => return Ok(None),
            };
            if self.range.is_after(&key) {
                return Ok(None);
            }
            if self.range.is_before(&key) {
                // A source that ignored the fast-forward: skip its partition.
                let s = &mut self.sources[m];
                s.peeked = None;
                s.reader.next_partition()?;
                s.between_partitions()?;
                continue;
            }
            self.active.clear();
            let mut tombstone = None;
            for (i, s) in self.sources.iter_mut().enumerate() {
                if let Some(Fragment::PartitionStart {
                    key: k,
                    tombstone: t,
                }) = &s.peeked
                    && *k == key
                {
                    tombstone = tombstone.max(*t);
                    s.peeked = None;
                    s.rt = None;
                    self.active.push(i);
                }
            }
            self.key = Some(key.clone());
            self.partition_tombstone = tombstone;
            self.emitted_rt = None;
            self.phase = Phase::Static;
            return Ok(Some(Fragment::PartitionStart { key, tombstone }));
        }
    }

    fn static_row(&mut self) -> Result<Option<Fragment>, Error> {
        self.phase = Phase::Clustering;
        let mut merged: Option<Row> = None;
        for &i in &self.active {
            let s = &mut self.sources[i];
            s.fill()?;
            if let Some(Fragment::StaticRow(_)) = &s.peeked
                && let Some(Fragment::StaticRow(row)) = s.peeked.take()
            {
                match &mut merged {
                    None => merged = Some(row),
                    Some(m) => m.apply(row),
                }
            }
        }
        Ok(merged.and_then(|mut row| {
            row.compact(self.partition_tombstone);
            (!row.is_empty()).then_some(Fragment::StaticRow(row))
        }))
    }

    /// Produces the next clustering fragment or partition end; `None` means
    /// "nothing to emit at this position, call again".
    fn clustering_step(&mut self) -> Result<Option<Fragment>, Error> {
        // One pass: fill every head, find the smallest position and every
        // source tied at it.
        let mut tied = std::mem::take(&mut self.tied);
        tied.clear();
        for idx in 0..self.active.len() {
            let i = self.active[idx];
            self.sources[i].fill()?;
            let s = &self.sources[i];
            match &s.peeked {
                None => return Err(self.bad_source(i, "ended inside a partition")),
                Some(Fragment::PartitionEnd) => {}
                Some(f) => {
                    let Some(p) = f.pos_ref() else {
                        let what = format!("produced a misplaced {}", f.kind());
                        return Err(self.bad_source(i, &what));
                    };
                    let order = match tied.first().and_then(|&m| self.sources[m].peeked_pos()) {
                        Some(best) => p.cmp(&best),
                        None => Ordering::Less,
                    };
                    match order {
                        Ordering::Less => {
                            tied.clear();
                            tied.push(i);
                        }
                        Ordering::Equal => tied.push(i),
                        Ordering::Greater => {}
                    }
                }
            }
        }
        let out = self.take_tied(&tied);
        self.tied = tied;
        out
    }

    /// Consumes the heads of the `tied` sources (all at the same position)
    /// and produces what they amount to; with no tied source, the partition
    /// end.
    fn take_tied(&mut self, tied: &[usize]) -> Result<Option<Fragment>, Error> {
        let Some((&m, rest)) = tied.split_first() else {
            // Every source is at its partition end.
            if let Some(&i) = self.active.iter().find(|&&i| self.sources[i].rt.is_some()) {
                return Err(self.bad_source(i, "ended a partition with a range tombstone open"));
            }
            for idx in 0..self.active.len() {
                let i = self.active[idx];
                self.sources[i].peeked = None;
                self.sources[i].between_partitions()?;
            }
            self.active.clear();
            self.phase = Phase::Between;
            return Ok(Some(Fragment::PartitionEnd));
        };

        match self.sources[m].peeked.take() {
            Some(Fragment::RangeTombstoneChange {
                position,
                tombstone,
            }) => {
                self.sources[m].rt = tombstone;
                for &i in rest {
                    let s = &mut self.sources[i];
                    if let Some(Fragment::RangeTombstoneChange { tombstone, .. }) = &s.peeked {
                        s.rt = *tombstone;
                        s.peeked = None;
                    }
                }
                let pt = self.partition_tombstone;
                let effective = self
                    .active
                    .iter()
                    .map(|&i| self.sources[i].rt)
                    .max()
                    .flatten()
                    .filter(|t| Some(*t) > pt);
                if effective == self.emitted_rt {
                    return Ok(None);
                }
                self.emitted_rt = effective;
                Ok(Some(Fragment::RangeTombstoneChange {
                    position,
                    tombstone: effective,
                }))
            }
            Some(Fragment::ClusteringRow { key, mut row }) => {
                for &i in rest {
                    let s = &mut self.sources[i];
                    if matches!(s.peeked, Some(Fragment::ClusteringRow { .. }))
                        && let Some(Fragment::ClusteringRow { row: other, .. }) = s.peeked.take()
                    {
                        row.apply(other);
                    }
                }
                row.compact(self.partition_tombstone.max(self.emitted_rt));
                if row.is_empty() {
                    return Ok(None);
                }
                Ok(Some(Fragment::ClusteringRow { key, row }))
            }
            _ => Ok(None),
        }
    }
}

impl<R: FragmentReader> FragmentReader for MergingReader<R> {
    fn next(&mut self) -> Result<Option<Fragment>, Error> {
        loop {
            let out = match self.phase {
                Phase::Between => match self.start_partition()? {
                    Some(f) => Some(f),
                    None => return Ok(None),
                },
                Phase::Static => self.static_row()?,
                Phase::Clustering => self.clustering_step()?,
            };
            if out.is_some() {
                self.produced += 1;
                return Ok(out);
            }
        }
    }

    fn fast_forward_to(&mut self, range: PartitionRange) -> Result<(), Error> {
        for s in &mut self.sources {
            // A source inside a partition drops the rest of it when forwarded.
            match &s.peeked {
                Some(Fragment::PartitionStart { key, .. }) if !range.is_before(key) => {
                    // Not produced yet and possibly in the new range: keep it,
                    // forward the source once this partition is consumed.
                    s.pending_ff = Some(range.clone());
                    continue;
                }
                Some(Fragment::PartitionStart { .. }) => {
                    // Before the new range: drop that partition.
                    s.peeked = None;
                    s.reader.next_partition()?;
                }
                Some(_) => s.peeked = None,
                None => {}
            }
            s.pending_ff = None;
            s.rt = None;
            s.exhausted = false;
            s.reader.fast_forward_to(range.clone())?;
        }
        self.active.clear();
        self.phase = Phase::Between;
        self.emitted_rt = None;
        self.range = range;
        Ok(())
    }

    fn next_partition(&mut self) -> Result<(), Error> {
        if self.phase == Phase::Between {
            return Ok(());
        }
        for idx in 0..self.active.len() {
            let i = self.active[idx];
            let s = &mut self.sources[i];
            let at_end = matches!(s.peeked, Some(Fragment::PartitionEnd));
            s.peeked = None;
            if !at_end {
                s.reader.next_partition()?;
            }
            s.between_partitions()?;
        }
        self.active.clear();
        self.phase = Phase::Between;
        self.emitted_rt = None;
        Ok(())
    }
}
