//! Point lookups and clustering slices: the filter, the Summary and one
//! Index block (kept in memory once read, `index_cache`) find a partition; its Data blocks are read from there.

use std::ops::Bound;

use mutation::{ClusteringRange, DecoratedKey, Fragment, PartitionRange, Position, RingPosition};

use super::{DataCursor, Sstable};
use crate::decoder::{Decoder, Origin};
use crate::error::{Component, Error};
use crate::index::{IndexEntry, decode_entry};
use crate::slice::Slicer;

impl Sstable {
    /// Finds the index entry of `key` (filter, summary, one index block).
    pub(crate) fn find(&self, key: &DecoratedKey) -> Result<Option<IndexEntry>, Error> {
        if !self.may_contain(key) {
            return Ok(None);
        }
        let token = key.token().value();
        let Some(i) = self.inner.summary.locate(token, key.key().as_bytes()) else {
            return Ok(None);
        };
        let block = self.inner.index_block(i)?;
        block.find(key, self.inner.origin(Component::Index))
    }

    /// The first index entry not before the start of `range`, if any.
    pub(crate) fn lower_bound(&self, range: &PartitionRange) -> Result<Option<IndexEntry>, Error> {
        let entries = &self.inner.summary.entries;
        let n = entries.partition_point(|e| before_start(range.start(), e.token, &e.key));
        let origin = self.inner.origin(Component::Index);
        for i in n.saturating_sub(1)..entries.len() {
            let block = self.inner.index_block(i)?;
            if let Some(entry) =
                block.first_not(origin, |t, k| before_start(range.start(), t, k))?
            {
                return Ok(Some(entry));
            }
        }
        Ok(None)
    }

    /// Reads the whole partition `key`: `None` if it is not in this sstable.
    pub fn read_partition(&self, key: &DecoratedKey) -> Result<Option<Vec<Fragment>>, Error> {
        self.read_slice(key, &ClusteringRange::full())
    }

    /// Reads partition `key` restricted to clustering `range` (see the
    /// slicing rules in the crate docs). For a large partition only the
    /// first Data block (partition start and static row) and the blocks
    /// overlapping the range are read.
    pub fn read_slice(
        &self,
        key: &DecoratedKey,
        range: &ClusteringRange,
    ) -> Result<Option<Vec<Fragment>>, Error> {
        let Some(entry) = self.find(key)? else {
            return Ok(None);
        };
        let mut out = Vec::new();
        let mut slicer = Slicer::new(range);
        let mut cursor = DataCursor::at(&self.inner, entry.data_block, entry.in_block)?;
        // Partition start, then the static row if any.
        let first = cursor.next_fragment(&self.inner)?;
        match &first {
            Some(Fragment::PartitionStart { key: k, .. }) if k == &entry.key => {}
            _ => {
                return Err(self.inner.origin(Component::Index).corrupt(
                    entry.data_block,
                    format!(
                        "index entry for {} does not point at its partition start in Data",
                        entry.key
                    ),
                ));
            }
        }
        slicer.feed(first.unwrap_or(Fragment::PartitionEnd), &mut out);
        // Jump to the last clustering block starting at or before the range
        // start, if that is past where we are.
        let jump = entry.cblocks.iter().rposition(|c| {
            c.first <= *slicer.start()
                && c.first != Position::AfterAll
                && c.first != Position::BeforeAll
        });
        let mut pending: Option<Fragment> = None;
        if let Some(i) = jump {
            // The static row, if any, is the fragment right after the start.
            match cursor.next_fragment(&self.inner)? {
                Some(f @ Fragment::StaticRow(_)) => slicer.feed(f, &mut out),
                other => pending = other,
            }
            let c = &entry.cblocks[i];
            let already_there = pending
                .as_ref()
                .and_then(Fragment::position)
                .is_some_and(|p| p >= c.first);
            if !already_there {
                pending = None;
                cursor = DataCursor::at(&self.inner, c.block, 0)?;
                slicer.reset(c.active);
            }
        }
        loop {
            let f = match pending.take() {
                Some(f) => Some(f),
                None => cursor.next_fragment(&self.inner)?,
            };
            let Some(f) = f else {
                return Err(self.inner.origin(Component::Data).corrupt(
                    cursor.offset(),
                    format!("Data ends inside partition {}", entry.key),
                ));
            };
            if matches!(f, Fragment::PartitionStart { .. }) {
                return Err(self.inner.origin(Component::Data).corrupt(
                    cursor.offset(),
                    format!("partition {} has no end", entry.key),
                ));
            }
            let end = matches!(f, Fragment::PartitionEnd);
            if slicer.finished() && !end {
                // Past the range: finish without decoding the rest.
                slicer.feed(Fragment::PartitionEnd, &mut out);
                return Ok(Some(out));
            }
            slicer.feed(f, &mut out);
            if end {
                return Ok(Some(out));
            }
        }
    }
}

/// True when `(token, key)` lies before the start bound.
pub(crate) fn before_start(bound: &Bound<RingPosition>, token: i64, key: &[u8]) -> bool {
    match bound {
        Bound::Unbounded => false,
        Bound::Included(RingPosition::Token(t)) => token < t.value(),
        Bound::Excluded(RingPosition::Token(t)) => token <= t.value(),
        Bound::Included(RingPosition::Key(k)) => {
            (token, key) < (k.token().value(), k.key().as_bytes())
        }
        Bound::Excluded(RingPosition::Key(k)) => {
            (token, key) <= (k.token().value(), k.key().as_bytes())
        }
    }
}

/// Decodes every index entry of one Index block (used by verify).
pub(crate) fn decode_index_block(
    raw: &[u8],
    base: u64,
    origin: Origin<'_>,
) -> Result<Vec<IndexEntry>, Error> {
    let mut d = Decoder::new(raw, base, origin);
    let mut out = Vec::new();
    while !d.is_empty() {
        out.push(decode_entry(&mut d)?);
    }
    Ok(out)
}
