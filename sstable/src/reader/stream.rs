//! The fragment stream of a scan or of a partition range, optionally
//! restricted to a clustering slice, with fast-forwarding.

use std::fmt;
use std::ops::Bound;

use mutation::{
    ClusteringRange, DecoratedKey, Fragment, FragmentReader, PartitionRange, Position, RingPosition,
};

use super::{DataCursor, Sstable};
use crate::error::{Component, Error};
use crate::index::{ClusteringBlock, IndexEntry};
use crate::slice::Slicer;

impl Sstable {
    /// A reader over every partition, in ring order.
    pub fn scan(&self) -> SstableReader {
        SstableReader::new(self.clone(), PartitionRange::full(), None)
    }

    /// A reader over the partitions in `range`, each restricted to `slice`
    /// (all rows when `None`); `None` when the key range or, for a
    /// single-key range, the filter rules every partition out (so callers
    /// need not create, merge and destroy an empty reader).
    pub fn make_reader_opt(
        &self,
        range: &PartitionRange,
        slice: Option<ClusteringRange>,
    ) -> Result<Option<SstableReader>, Error> {
        let (Some(first), Some(last)) = (&self.inner.first, &self.inner.last) else {
            return Ok(None);
        };
        // The range ends before the first key, or starts after the last.
        if range.is_after(first) || range.is_before(last) {
            return Ok(None);
        }
        if let (Bound::Included(RingPosition::Key(a)), Bound::Included(RingPosition::Key(b))) =
            (range.start(), range.end())
            && a == b
            && !self.may_contain(a)
        {
            return Ok(None);
        }
        let Some(entry) = self.lower_bound(range)? else {
            return Ok(None);
        };
        if range.is_after(&entry.key) {
            return Ok(None);
        }
        let mut reader = SstableReader::new(self.clone(), range.clone(), slice);
        reader.position_at(&entry)?;
        Ok(Some(reader))
    }
}

/// A fragment stream over (part of) one sstable: a full scan, or the
/// partitions of a range, optionally restricted to a clustering slice.
pub struct SstableReader {
    table: Sstable,
    range: PartitionRange,
    slice: Option<Slicer>,
    cursor: DataCursor,
    in_partition: bool,
    skipping: bool,
    /// The last partition whose start the cursor passed (produced or
    /// skipped): a fast-forward never goes back to it or before it.
    last_started: Option<DecoratedKey>,
    /// The partition (and its Data block) the Index said the cursor was
    /// moved to: the next partition start must be that one.
    expect: Option<(DecoratedKey, u64)>,
    /// For a sliced read of a large partition: the last clustering block
    /// of the partition `position_at` moved to that starts at or before
    /// the slice, to jump to once its start (and static row) passed.
    seek: Option<ClusteringBlock>,
    /// `seek`, armed when that partition started: taken at its first
    /// fragment after the static row.
    jump: Option<ClusteringBlock>,
    out: std::collections::VecDeque<Fragment>,
    scratch: Vec<Fragment>,
    done: bool,
}

impl fmt::Debug for SstableReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SstableReader")
            .field("range", &self.range)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl SstableReader {
    fn new(table: Sstable, range: PartitionRange, slice: Option<ClusteringRange>) -> Self {
        SstableReader {
            table,
            range,
            slice: slice.as_ref().map(Slicer::new),
            cursor: DataCursor::start(),
            in_partition: false,
            skipping: false,
            last_started: None,
            expect: None,
            seek: None,
            jump: None,
            out: std::collections::VecDeque::new(),
            scratch: Vec::new(),
            done: false,
        }
    }

    /// Moves to the partition start `entry` points at (checked when read).
    fn position_at(&mut self, entry: &IndexEntry) -> Result<(), Error> {
        self.cursor = DataCursor::at(&self.table.inner, entry.data_block, entry.in_block)?;
        self.expect = Some((entry.key.clone(), entry.data_block));
        // The same rule as `read_slice`: the last block starting at or
        // before the slice's start (a block starting with the static row
        // or the partition end is no place to jump to).
        self.seek = self.slice.as_ref().and_then(|s| {
            entry
                .cblocks
                .iter()
                .rfind(|c| {
                    c.first <= *s.start()
                        && c.first != Position::AfterAll
                        && c.first != Position::BeforeAll
                })
                .cloned()
        });
        self.jump = None;
        self.in_partition = false;
        self.skipping = false;
        self.out.clear();
        self.done = false;
        Ok(())
    }

    /// The next fragment, as an sstable error.
    pub fn next_fragment(&mut self) -> Result<Option<Fragment>, Error> {
        loop {
            if let Some(f) = self.out.pop_front() {
                return Ok(Some(f));
            }
            if self.done {
                return Ok(None);
            }
            let inner = &self.table.inner;
            let Some(f) = self.cursor.next_fragment(inner)? else {
                if self.in_partition {
                    return Err(inner
                        .origin(Component::Data)
                        .corrupt(self.cursor.offset(), "Data ends inside a partition"));
                }
                self.done = true;
                continue;
            };
            match &f {
                Fragment::PartitionStart { key, .. } => {
                    if self.in_partition {
                        return Err(inner.origin(Component::Data).corrupt(
                            self.cursor.offset(),
                            format!("partition {key} starts before the previous one ended"),
                        ));
                    }
                    let positioned = self.expect.take();
                    if let Some((expected, block)) = &positioned
                        && key != expected
                    {
                        return Err(inner.origin(Component::Index).corrupt(
                            *block,
                            format!("index entry for {expected} points at partition {key} in Data"),
                        ));
                    }
                    self.jump = if positioned.is_some() {
                        self.seek.take()
                    } else {
                        None
                    };
                    if self.range.is_after(key) {
                        self.done = true;
                        continue;
                    }
                    self.in_partition = true;
                    self.skipping = self.range.is_before(key);
                    self.last_started = Some(key.clone());
                    if let Some(s) = &mut self.slice {
                        s.reset(None);
                    }
                }
                Fragment::PartitionEnd => {
                    if !self.in_partition {
                        return Err(inner
                            .origin(Component::Data)
                            .corrupt(self.cursor.offset(), "partition end outside a partition"));
                    }
                    self.in_partition = false;
                }
                _ => {
                    if !self.in_partition {
                        return Err(inner.origin(Component::Data).corrupt(
                            self.cursor.offset(),
                            format!("{} outside a partition", f.kind()),
                        ));
                    }
                }
            }
            if self.skipping {
                if !self.in_partition {
                    self.skipping = false;
                }
                continue;
            }
            // A sliced read of a large partition jumps past the blocks
            // before its slice at its first clustering fragment, after the
            // partition start and static row passed (as `read_slice`
            // does); a partition that ends first drops the jump.
            if matches!(f, Fragment::PartitionEnd) {
                self.jump = None;
            }
            if self.jump.is_some()
                && let Some(position) = f.position()
                && let Some(c) = self.jump.take()
                && position < c.first
            {
                self.cursor = DataCursor::at(inner, c.block, 0)?;
                if let Some(s) = &mut self.slice {
                    s.reset(c.active);
                }
                continue;
            }
            let single = single_key(&self.range);
            match &mut self.slice {
                None => return Ok(Some(f)),
                Some(s) => {
                    if s.finished() && !matches!(f, Fragment::PartitionEnd) {
                        if single {
                            // Past the slice of the range's one partition:
                            // end it without reading the rest (as
                            // `read_slice` does).
                            self.scratch.clear();
                            s.feed(Fragment::PartitionEnd, &mut self.scratch);
                            self.out.extend(self.scratch.drain(..));
                            self.in_partition = false;
                            self.done = true;
                        }
                        continue;
                    }
                    self.scratch.clear();
                    s.feed(f, &mut self.scratch);
                    self.out.extend(self.scratch.drain(..));
                }
            }
        }
    }
}

/// Whether `range` holds exactly one partition key.
fn single_key(range: &PartitionRange) -> bool {
    matches!(
        (range.start(), range.end()),
        (Bound::Included(RingPosition::Key(a)), Bound::Included(RingPosition::Key(b))) if a == b
    )
}

impl FragmentReader for SstableReader {
    fn next(&mut self) -> Result<Option<Fragment>, mutation::Error> {
        self.next_fragment()
            .map_err(|e| mutation::Error::Source(Box::new(e)))
    }

    fn fast_forward_to(&mut self, range: PartitionRange) -> Result<(), mutation::Error> {
        let wrap = |e: Error| mutation::Error::Source(Box::new(e));
        // The stream continues after every partition already passed, even
        // when `range` starts before it (a merging reader that read ahead
        // forwards its sources to ranges starting at what it peeked).
        let mut range = range;
        let mut entry = None;
        let passed_all = self
            .last_started
            .as_ref()
            .is_some_and(|k| range.is_after(k));
        if !passed_all {
            if let Some(last) = self.last_started.as_ref().filter(|k| !range.is_before(k)) {
                range = PartitionRange::new(
                    Bound::Excluded(RingPosition::Key(last.clone())),
                    range.end().clone(),
                )?;
            }
            entry = self.table.lower_bound(&range).map_err(wrap)?;
        }
        self.range = range;
        match entry {
            Some(e) if !self.range.is_after(&e.key) => self.position_at(&e).map_err(wrap),
            _ => {
                self.out.clear();
                self.in_partition = false;
                self.skipping = false;
                self.expect = None;
                self.done = true;
                Ok(())
            }
        }
    }

    fn next_partition(&mut self) -> Result<(), mutation::Error> {
        self.out.clear();
        if self.in_partition {
            self.skipping = true;
        }
        Ok(())
    }
}
