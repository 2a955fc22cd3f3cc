//! A table's read path: the merge of its memtables with its row cache (or
//! its sstables, without a cache), the reader it hands out
//! ([`TableReader`]), and the sources the cache and a flushed memtable's
//! readers continue in.

use std::fmt;

use compaction::SstableHandle;
use memtable::ReplacementSource;
use mutation::{
    ClusteringRange, Fragment, FragmentReader, MergingReader, Mutation, PartitionRange,
};
use row_cache::UnderlyingSource;

use crate::database::memtable_list::ReadSources;
use crate::database::sstables::PinnedSstables;
use crate::database::table::{Table, TableMemtable};
use crate::error::Error;
use crate::sync::{Arc, Weak};

/// An open sstable of a table. It is also the replacement source that
/// readers of the memtable it was flushed from continue in.
#[derive(Debug)]
pub(crate) struct TableSstable {
    /// The sstable in its set (the handle pins its files for the
    /// memtable's readers, whatever compaction does with it).
    pub(crate) handle: SstableHandle,
}

impl ReplacementSource for TableSstable {
    fn make_reader(
        &self,
        range: PartitionRange,
        slice: ClusteringRange,
    ) -> Result<Box<dyn FragmentReader + Send>, mutation::Error> {
        match self.handle.sstable().make_reader_opt(&range, Some(slice)) {
            Ok(Some(reader)) => Ok(Box::new(reader)),
            Ok(None) => Ok(Box::new(mutation::from_mutations(Vec::new()))),
            Err(e) => Err(mutation::Error::Source(Box::new(e))),
        }
    }
}

/// A table's sstables as its row cache reads through to them: the table,
/// weakly (the cache is the table's), so every read pins the table's sets
/// as they are then (sstables added by flushes, replaced by compaction).
pub(crate) struct CacheSource {
    pub(crate) table: Weak<Table>,
}

/// A read of the pinned sstables for the cache: the pin lives as long as
/// the read.
struct PinnedRead {
    merged: MergingReader<Box<dyn FragmentReader + Send>>,
    _pinned: PinnedSstables,
}

impl FragmentReader for PinnedRead {
    fn next(&mut self) -> Result<Option<Fragment>, mutation::Error> {
        self.merged.next()
    }

    fn fast_forward_to(&mut self, range: PartitionRange) -> Result<(), mutation::Error> {
        self.merged.fast_forward_to(range)
    }

    fn next_partition(&mut self) -> Result<(), mutation::Error> {
        self.merged.next_partition()
    }
}

impl UnderlyingSource for CacheSource {
    fn make_reader(
        &self,
        range: PartitionRange,
        slice: ClusteringRange,
    ) -> Result<Box<dyn FragmentReader + Send>, mutation::Error> {
        let Some(table) = self.table.upgrade() else {
            // The table is gone (dropped or closed): nothing to read.
            return Ok(Box::new(mutation::from_mutations(Vec::new())));
        };
        let pinned = table.sstables.pin();
        let mut readers: Vec<Box<dyn FragmentReader + Send>> = Vec::new();
        for handle in pinned.handles() {
            let reader = handle
                .sstable()
                .make_reader_opt(&range, Some(slice.clone()))
                .map_err(|e| mutation::Error::Source(Box::new(e)))?;
            if let Some(reader) = reader {
                readers.push(Box::new(reader));
            }
        }
        table.sstables.note_read(readers.len());
        Ok(Box::new(PinnedRead {
            merged: MergingReader::new(readers),
            _pinned: pinned,
        }))
    }
}

impl Table {
    /// A reader merging every memtable that has something in `range`
    /// with the row cache (which reads through to the sstables), or with
    /// the sstables when the table has no cache; each restricted to
    /// `slice`.
    pub(crate) fn make_reader(
        &self,
        range: PartitionRange,
        slice: ClusteringRange,
    ) -> Result<TableReader, Error> {
        if self.cache.is_some() {
            // The cache reads the sstables itself, pinning them per read
            // of its source (after this snapshot), so this reader pins
            // none.
            return self.make_cached_reader(&self.list.memtables(), range, slice);
        }
        // The memtables, then the sstables pinned (`memtable_list`'s
        // protocol).
        let ReadSources { memtables, pinned } = self.list.read_sources(&self.sstables);
        let mut readers = Gathered::default();
        self.push_memtable_readers(&memtables, &range, &slice, &mut readers)?;
        let memtable_readers = readers.len();
        for handle in pinned.handles() {
            let reader = handle
                .sstable()
                .make_reader_opt(&range, Some(slice.clone()))
                .map_err(|source| Error::Sstable {
                    table: self.name().to_owned(),
                    dir: handle
                        .sstable()
                        .component_path(sstable::Component::Data)
                        .parent()
                        .map(std::path::Path::to_path_buf)
                        .unwrap_or_default(),
                    source,
                })?;
            if let Some(reader) = reader {
                readers.push(Box::new(reader));
            }
        }
        self.sstables.note_read(readers.len() - memtable_readers);
        Ok(readers.into_reader(Some(pinned)))
    }

    /// [`make_reader`](Self::make_reader) building a reader of every
    /// memtable and of the cache even where `make_reader_opt` would know
    /// there is nothing: the baseline the `cache` bench measures
    /// `make_reader_opt` against (feature `testing`). Without a cache, as
    /// `make_reader`.
    #[cfg(feature = "testing")]
    pub(crate) fn make_reader_always(
        &self,
        range: PartitionRange,
        slice: ClusteringRange,
    ) -> Result<TableReader, Error> {
        let Some(cache) = &self.cache else {
            return self.make_reader(range, slice);
        };
        let mut readers: Vec<Box<dyn FragmentReader + Send>> = Vec::new();
        for memtable in self.list.memtables() {
            let reader = memtable
                .memtable()
                .make_reader(range.clone(), slice.clone())
                .map_err(|source| Error::Memtable {
                    table: self.name().to_owned(),
                    source,
                })?;
            readers.push(Box::new(reader));
        }
        readers.push(Box::new(cache.make_reader(range, slice)));
        Ok(TableReader {
            inner: Inner::Merged(MergingReader::new(readers)),
            _pinned: Some(self.sstables.pin()),
        })
    }

    /// [`make_reader`](Self::make_reader) with the cache in place of the
    /// sstables.
    fn make_cached_reader(
        &self,
        memtables: &[Arc<TableMemtable>],
        range: PartitionRange,
        slice: ClusteringRange,
    ) -> Result<TableReader, Error> {
        let mut readers = Gathered::default();
        self.push_memtable_readers(memtables, &range, &slice, &mut readers)?;
        if let Some(reader) = self
            .cache
            .as_ref()
            .and_then(|cache| cache.make_reader_opt(range, slice))
        {
            readers.push(Box::new(reader));
        }
        Ok(readers.into_reader(None))
    }

    /// Pushes the reader of each memtable that has something in `range`.
    fn push_memtable_readers(
        &self,
        memtables: &[Arc<TableMemtable>],
        range: &PartitionRange,
        slice: &ClusteringRange,
        readers: &mut Gathered,
    ) -> Result<(), Error> {
        for memtable in memtables {
            let reader = memtable
                .memtable()
                .make_reader_opt(range.clone(), slice.clone())
                .map_err(|source| Error::Memtable {
                    table: self.name().to_owned(),
                    source,
                })?;
            if let Some(reader) = reader {
                readers.push(Box::new(reader));
            }
        }
        Ok(())
    }
}

/// A read of one table: the merge of its memtables and its row cache (or
/// its sstables, without a cache), in ring order, every partition
/// reconciled. A reader that stays open across a
/// flush sees each row exactly once: it keeps the sources it started with,
/// and readers of a flushed memtable continue in its sstable at their next
/// partition.
pub struct TableReader {
    inner: Inner,
    /// The sstable versions it reads: compaction deletes none of them
    /// while it is open (`None` with a cache, which pins them per read of
    /// its source).
    _pinned: Option<PinnedSstables>,
}

/// The sources of a [`TableReader`]: a single source is read as it is
/// (each source's stream is already reconciled, so merging one would only
/// cost), several are merged.
#[expect(
    clippy::large_enum_variant,
    reason = "one per open read, held in place; boxing the merge would cost every merged read an allocation"
)]
enum Inner {
    One(Box<dyn FragmentReader + Send>),
    Merged(MergingReader<Box<dyn FragmentReader + Send>>),
}

/// The readers of a read's sources, as they are gathered: the first is
/// held on its own, so a read of one source allocates no list.
#[derive(Default)]
struct Gathered {
    first: Option<Box<dyn FragmentReader + Send>>,
    rest: Vec<Box<dyn FragmentReader + Send>>,
}

impl Gathered {
    fn push(&mut self, reader: Box<dyn FragmentReader + Send>) {
        if self.first.is_none() {
            self.first = Some(reader);
        } else {
            self.rest.push(reader);
        }
    }

    fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.rest.len()
    }

    /// One source read as it is; none or several merged.
    fn into_reader(self, pinned: Option<PinnedSstables>) -> TableReader {
        let inner = match (self.first, self.rest) {
            (Some(one), rest) if rest.is_empty() => Inner::One(one),
            (Some(first), mut rest) => {
                rest.insert(0, first);
                Inner::Merged(MergingReader::new(rest))
            }
            (None, rest) => Inner::Merged(MergingReader::new(rest)),
        };
        TableReader {
            inner,
            _pinned: pinned,
        }
    }
}

impl TableReader {
    fn reader(&mut self) -> &mut dyn FragmentReader {
        match &mut self.inner {
            Inner::One(one) => &mut **one,
            Inner::Merged(merged) => merged,
        }
    }
}

impl fmt::Debug for TableReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TableReader").finish_non_exhaustive()
    }
}

impl FragmentReader for TableReader {
    fn next(&mut self) -> Result<Option<Fragment>, mutation::Error> {
        self.reader().next()
    }

    fn fast_forward_to(&mut self, range: PartitionRange) -> Result<(), mutation::Error> {
        self.reader().fast_forward_to(range)
    }

    fn next_partition(&mut self) -> Result<(), mutation::Error> {
        self.reader().next_partition()
    }

    /// One source's partition as that source hands it over (a cache hit
    /// whole, as it was decoded); several sources' merged and collected.
    fn next_mutation(&mut self) -> Result<Option<Mutation>, mutation::Error> {
        self.reader().next_mutation()
    }
}
