//! Opening an sstable and reading it: point lookups, clustering slices,
//! and full or partition-range scans as fragment streams.
//!
//! One file per concern: [`open`] reads and cross-checks the small
//! components; [`lookup`] finds partitions through the filter, Summary and
//! Index and reads one partition or a slice of it; [`cursor`] decodes
//! fragments one after another from a Data position; [`stream`] is the
//! fragment stream of a scan or a partition range. This file holds what
//! they share: the open sstable and its accessors.

use std::fmt;
use std::path::{Path, PathBuf};

use mutation::DecoratedKey;

use crate::block::read_block_sized;
use crate::bloom::BloomFilter;
use crate::decoder::Origin;
use crate::error::{Component, Error, io_err};
use crate::index_cache::{BlockRef, IndexBlock, IndexCache};
use crate::statistics::Statistics;
use crate::storage::{MemSource, ReleasedSource, Source};
use crate::summary::Summary;
use crate::sync::{Arc, AtomicU64, Ordering};

mod cursor;
mod lookup;
mod open;
mod stream;

pub(crate) use cursor::DataCursor;
pub(crate) use lookup::decode_index_block;
pub use stream::SstableReader;

/// The most Digest bytes an open sstable keeps: a valid digest is at most
/// 64 bytes, and one byte more lets the verifier see a longer one.
const MAX_DIGEST_HELD: u64 = 65;

/// The parts of an open sstable shared by its readers.
#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) generation: u64,
    pub(crate) paths: Vec<PathBuf>,
    pub(crate) sources: Vec<Arc<dyn Source>>,
    pub(crate) summary: Summary,
    pub(crate) filter: BloomFilter,
    pub(crate) stats: Statistics,
    pub(crate) first: Option<DecoratedKey>,
    pub(crate) last: Option<DecoratedKey>,
    pub(crate) data_blocks_read: AtomicU64,
    /// Bytes the first read of a Data block asks for
    /// ([`data_block_guess`]): most blocks are read whole in one.
    pub(crate) data_block_guess: usize,
    /// The Index blocks read so far, kept (`index_cache`).
    pub(crate) index_cache: IndexCache,
}

/// The first read of a point read's Data block: the sstable's average
/// block (header, payload and crc) and an eighth more, so blocks cut at
/// the same `block_size` from fragments of similar sizes are read in one
/// positional read; a longer one costs a second read of the rest. At
/// least 4 KiB, at most 1 MiB.
pub(crate) fn data_block_guess(stats: &Statistics) -> usize {
    let blocks = stats.data_blocks.max(1);
    let average = stats.data_size.saturating_sub(crate::block::PREAMBLE_LEN) / blocks;
    let guess = average.saturating_add(average / 8);
    usize::try_from(guess.clamp(4 << 10, 1 << 20)).unwrap_or(1 << 20)
}

fn slot(c: Component) -> usize {
    Component::ALL.iter().position(|&x| x == c).unwrap_or(0)
}

impl Inner {
    pub(crate) fn origin(&self, c: Component) -> Origin<'_> {
        Origin {
            file: &self.paths[slot(c)],
            component: c,
        }
    }

    pub(crate) fn source(&self, c: Component) -> &dyn Source {
        self.sources[slot(c)].as_ref()
    }

    /// Closes the files an open sstable no longer reads: TOC, Summary,
    /// Filter and Statistics were decoded into memory, and the Digest (at
    /// most [`MAX_DIGEST_HELD`] bytes are kept, enough for the verifier to
    /// see it is too long) is held in memory. Only Data and Index stay open,
    /// two descriptors per sstable.
    pub(crate) fn release_decoded_components(&mut self) -> Result<(), Error> {
        for c in [
            Component::Toc,
            Component::Summary,
            Component::Filter,
            Component::Statistics,
        ] {
            let len = self.source(c).len();
            self.sources[slot(c)] = Arc::new(ReleasedSource { len });
        }
        let digest = self.source(Component::Digest);
        let held = digest.len().min(MAX_DIGEST_HELD) as usize;
        let mut bytes = vec![0u8; held];
        digest
            .read_exact_at(&mut bytes, 0)
            .map_err(|e| io_err("read", &self.paths[slot(Component::Digest)])(e))?;
        self.sources[slot(Component::Digest)] = Arc::new(MemSource(bytes));
        Ok(())
    }

    fn data_end(&self) -> u64 {
        self.stats.data_size
    }

    fn read_data_block(&self, offset: u64) -> Result<crate::block::Block, Error> {
        self.data_blocks_read.fetch_add(1, Ordering::Relaxed);
        read_block_sized(
            self.source(Component::Data),
            offset,
            self.origin(Component::Data),
            self.data_block_guess,
        )
    }

    /// The Index block of Summary entry `i`: from the cache, or read
    /// (in one positional read: the next entry's offset, or the end of the
    /// Index, tells its length), walked, and kept if the budget allows.
    pub(crate) fn index_block(&self, i: usize) -> Result<BlockRef<'_>, Error> {
        self.index_cache.get_or_load(i, || {
            let entries = &self.summary.entries;
            let offset = entries[i].index_offset;
            let end = entries
                .get(i + 1)
                .map_or(self.summary.index_size, |e| e.index_offset);
            let len = usize::try_from(end.saturating_sub(offset)).unwrap_or(usize::MAX);
            let origin = self.origin(Component::Index);
            let block = read_block_sized(self.source(Component::Index), offset, origin, len)?;
            IndexBlock::new(block.raw, offset + crate::block::HEADER_LEN as u64, origin)
        })
    }

    /// [`read_data_block`](Self::read_data_block) for a sequential scan,
    /// through its read-ahead window.
    fn read_data_block_ahead(
        &self,
        offset: u64,
        ahead: &mut crate::block::ReadAhead,
    ) -> Result<crate::block::Block, Error> {
        self.data_blocks_read.fetch_add(1, Ordering::Relaxed);
        crate::block::read_block_ahead(
            self.source(Component::Data),
            offset,
            self.origin(Component::Data),
            ahead,
        )
    }
}

/// An open, immutable sstable. Cheap to clone; readers share it.
///
/// Opening reads and checks the TOC, Summary, Filter and Statistics and the
/// preambles and sizes of Data and Index; everything else is read (and
/// checksummed) on demand.
#[derive(Clone)]
pub struct Sstable {
    pub(crate) inner: Arc<Inner>,
}

impl fmt::Debug for Sstable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sstable")
            .field("data", &self.inner.paths[0])
            .field("partitions", &self.inner.stats.partitions)
            .finish_non_exhaustive()
    }
}

impl Sstable {
    /// The generation (0 for an sstable opened from memory).
    pub fn generation(&self) -> u64 {
        self.inner.generation
    }

    /// The statistics read at open.
    pub fn statistics(&self) -> &Statistics {
        &self.inner.stats
    }

    /// The path of one of the component files.
    pub fn component_path(&self, c: Component) -> &Path {
        &self.inner.paths[slot(c)]
    }

    /// How many Data blocks readers of this sstable have read (and
    /// checksummed) so far: a diagnostic for tests and benchmarks.
    pub fn data_blocks_read(&self) -> u64 {
        self.inner.data_blocks_read.load(Ordering::Relaxed)
    }

    /// Bloom filter parameters: probes per key and size in bits.
    pub fn filter_parameters(&self) -> (u32, u64) {
        (self.inner.filter.probes(), self.inner.filter.nbits())
    }

    /// The first and last partition keys, or `None` when empty.
    pub fn key_range(&self) -> Option<(&DecoratedKey, &DecoratedKey)> {
        Some((self.inner.first.as_ref()?, self.inner.last.as_ref()?))
    }

    /// False when the bloom filter rules `key` out.
    pub fn may_contain(&self, key: &DecoratedKey) -> bool {
        self.inner.stats.partitions > 0 && self.inner.filter.may_contain(key.token().value() as u64)
    }
}
