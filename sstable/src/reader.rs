//! Opening an sstable and reading it: point lookups, clustering slices,
//! and full or partition-range scans as fragment streams.

use std::fmt;
use std::ops::Bound;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use mutation::{
    ClusteringRange, DecoratedKey, Fragment, FragmentReader, PartitionRange, Position, RingPosition,
};

use crate::block::{check_preamble, read_block, read_single_block_component};
use crate::bloom::BloomFilter;
use crate::codec::decode_fragment;
use crate::directory::{component_path, parse_component_path};
use crate::error::{Component, Error, io_err};
use crate::index::{IndexEntry, decode_entry, decode_rest, peek_key, skip_rest};
use crate::slice::Slicer;
use crate::statistics::Statistics;
use crate::storage::{FileSource, MemSource, Source};
use crate::summary::Summary;
use crate::sync::{Arc, AtomicU64, Ordering};
use crate::toc::check_toc;
use crate::varint::{Decoder, Origin};
use crate::{DATA_MAGIC, FILTER_MAGIC, INDEX_MAGIC, STATISTICS_MAGIC, SUMMARY_MAGIC};

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

    fn data_end(&self) -> u64 {
        self.stats.data_size
    }

    fn read_data_block(&self, offset: u64) -> Result<crate::block::Block, Error> {
        self.data_blocks_read.fetch_add(1, Ordering::Relaxed);
        read_block(
            self.source(Component::Data),
            offset,
            self.origin(Component::Data),
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
    /// Opens the committed sstable `generation` in `dir`.
    pub fn open(dir: impl AsRef<Path>, generation: u64) -> Result<Self, Error> {
        let dir = dir.as_ref();
        let toc = component_path(dir, generation, Component::Toc);
        if !toc.exists() {
            return Err(Error::NotFound {
                dir: dir.to_path_buf(),
                generation,
            });
        }
        let mut paths = Vec::new();
        let mut sources: Vec<Arc<dyn Source>> = Vec::new();
        for c in Component::ALL {
            let path = component_path(dir, generation, c);
            let file = match std::fs::File::open(&path) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(Error::MissingComponent {
                        dir: dir.to_path_buf(),
                        generation,
                        component: c,
                    });
                }
                Err(e) => return Err(io_err("open", &path)(e)),
            };
            let len = file.metadata().map_err(io_err("stat", &path))?.len();
            sources.push(Arc::new(FileSource::new(file, len)));
            paths.push(path);
        }
        Self::from_sources(generation, paths, sources)
    }

    /// Opens the sstable one of whose component files is `path` (for
    /// example `.../sst-3-Data.db` or `.../sst-3-TOC.txt`).
    pub fn open_path(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        let (generation, _) = parse_component_path(path)?;
        let dir = path
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        let dir = if dir.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            dir
        };
        Self::open(dir, generation)
    }

    /// Opens an sstable held in memory: `components[i]` holds the bytes of
    /// `Component::ALL[i]`. Errors name the files as `<memory>/sst-0-...`.
    /// Used by tests and the fuzz target.
    pub fn from_bytes(components: [Vec<u8>; 7]) -> Result<Self, Error> {
        let dir = Path::new("<memory>");
        let paths = Component::ALL
            .iter()
            .map(|&c| component_path(dir, 0, c))
            .collect();
        let sources = components
            .into_iter()
            .map(|b| Arc::new(MemSource(b)) as Arc<dyn Source>)
            .collect();
        Self::from_sources(0, paths, sources)
    }

    fn from_sources(
        generation: u64,
        paths: Vec<PathBuf>,
        sources: Vec<Arc<dyn Source>>,
    ) -> Result<Self, Error> {
        let mut inner = Inner {
            generation,
            paths,
            sources,
            summary: Summary::default(),
            filter: BloomFilter::new(1, 0.5),
            stats: Statistics::default(),
            first: None,
            last: None,
            data_blocks_read: AtomicU64::new(0),
        };
        let read_all = |inner: &Inner, c: Component| -> Result<Vec<u8>, Error> {
            let src = inner.source(c);
            let len = usize::try_from(src.len())
                .unwrap_or(usize::MAX)
                .min(1 << 20);
            if src.len() > len as u64 {
                return Err(inner.origin(c).corrupt(
                    0,
                    format!("{}-byte {c} component exceeds the 1 MiB limit", src.len()),
                ));
            }
            let mut buf = vec![0u8; len];
            src.read_exact_at(&mut buf, 0)
                .map_err(|e| io_err("read", &inner.paths[slot(c)])(e))?;
            Ok(buf)
        };
        check_toc(
            &read_all(&inner, Component::Toc)?,
            inner.origin(Component::Toc),
        )?;
        let body = read_single_block_component(
            inner.source(Component::Statistics),
            STATISTICS_MAGIC,
            inner.origin(Component::Statistics),
        )?;
        let stats = Statistics::decode(&body, 8 + 9, inner.origin(Component::Statistics))?;
        let body = read_single_block_component(
            inner.source(Component::Summary),
            SUMMARY_MAGIC,
            inner.origin(Component::Summary),
        )?;
        let summary = Summary::decode(&body, 8 + 9, inner.origin(Component::Summary))?;
        let body = read_single_block_component(
            inner.source(Component::Filter),
            FILTER_MAGIC,
            inner.origin(Component::Filter),
        )?;
        let filter = BloomFilter::decode(&body, 8 + 9, inner.origin(Component::Filter))?;
        check_preamble(
            inner.source(Component::Data),
            DATA_MAGIC,
            inner.origin(Component::Data),
        )?;
        check_preamble(
            inner.source(Component::Index),
            INDEX_MAGIC,
            inner.origin(Component::Index),
        )?;
        let data_len = inner.source(Component::Data).len();
        if data_len != stats.data_size {
            return Err(inner.origin(Component::Data).corrupt(
                data_len.min(stats.data_size),
                format!(
                    "Data is {data_len} bytes but Statistics says {}",
                    stats.data_size
                ),
            ));
        }
        let index_len = inner.source(Component::Index).len();
        if index_len != stats.index_size || index_len != summary.index_size {
            return Err(inner.origin(Component::Index).corrupt(
                index_len.min(stats.index_size),
                format!(
                    "Index is {index_len} bytes but Statistics says {} and Summary {}",
                    stats.index_size, summary.index_size
                ),
            ));
        }
        if summary.entries.len() as u64 != stats.index_blocks {
            return Err(inner.origin(Component::Summary).corrupt(
                8,
                format!(
                    "Summary has {} entries but Statistics counts {} Index blocks",
                    summary.entries.len(),
                    stats.index_blocks
                ),
            ));
        }
        if (stats.partitions == 0) != summary.entries.is_empty() {
            return Err(inner.origin(Component::Summary).corrupt(
                8,
                format!(
                    "Summary has {} entries for {} partitions",
                    summary.entries.len(),
                    stats.partitions
                ),
            ));
        }
        let decorate = |b: &[u8], c: Component| {
            DecoratedKey::from_bytes(Bytes::copy_from_slice(b))
                .map_err(|e| inner.origin(c).corrupt(8, e.to_string()))
        };
        let (mut first, mut last) = (None, None);
        if stats.partitions > 0 {
            first = Some(decorate(&stats.first_key, Component::Statistics)?);
            last = Some(decorate(&stats.last_key, Component::Statistics)?);
        }
        for e in &summary.entries {
            let key = decorate(&e.key, Component::Summary)?;
            if key.token().value() != e.token {
                return Err(inner.origin(Component::Summary).corrupt(
                    8,
                    format!("summary entry for {key} stores token {}", e.token),
                ));
            }
        }
        inner.first = first;
        inner.last = last;
        inner.stats = stats;
        inner.summary = summary;
        inner.filter = filter;
        Ok(Sstable {
            inner: Arc::new(inner),
        })
    }

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

    /// Finds the index entry of `key` (filter, summary, one index block).
    pub(crate) fn find(&self, key: &DecoratedKey) -> Result<Option<IndexEntry>, Error> {
        if !self.may_contain(key) {
            return Ok(None);
        }
        let token = key.token().value();
        let Some(i) = self.inner.summary.locate(token, key.key().as_bytes()) else {
            return Ok(None);
        };
        let offset = self.inner.summary.entries[i].index_offset;
        let origin = self.inner.origin(Component::Index);
        let block = read_block(self.inner.source(Component::Index), offset, origin)?;
        let mut d = Decoder::new(&block.raw, offset + 9, origin);
        while !d.is_empty() {
            let (t, k) = peek_key(&mut d)?;
            match (t, k).cmp(&(token, key.key().as_bytes())) {
                std::cmp::Ordering::Less => skip_rest(&mut d)?,
                std::cmp::Ordering::Equal => return decode_rest(&mut d, t, k).map(Some),
                std::cmp::Ordering::Greater => return Ok(None),
            }
        }
        Ok(None)
    }

    /// The first index entry not before the start of `range`, if any.
    pub(crate) fn lower_bound(&self, range: &PartitionRange) -> Result<Option<IndexEntry>, Error> {
        let entries = &self.inner.summary.entries;
        let n = entries.partition_point(|e| before_start(range.start(), e.token, &e.key));
        let origin = self.inner.origin(Component::Index);
        for e in &entries[n.saturating_sub(1)..] {
            let block = read_block(self.inner.source(Component::Index), e.index_offset, origin)?;
            let mut d = Decoder::new(&block.raw, e.index_offset + 9, origin);
            while !d.is_empty() {
                let (t, k) = peek_key(&mut d)?;
                if before_start(range.start(), t, k) {
                    skip_rest(&mut d)?;
                } else {
                    return decode_rest(&mut d, t, k).map(Some);
                }
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

/// Decodes fragments sequentially from a Data position.
#[derive(Debug)]
pub(crate) struct DataCursor {
    block: Vec<u8>,
    block_offset: u64,
    pos: usize,
    next_block: u64,
}

impl DataCursor {
    /// A cursor at raw offset `in_block` of the Data block at `block`.
    pub(crate) fn at(inner: &Inner, block: u64, in_block: u64) -> Result<Self, Error> {
        let origin = inner.origin(Component::Data);
        if block < 8 || block >= inner.data_end() {
            return Err(origin.corrupt(
                block,
                format!("data position {block} is outside the Data blocks"),
            ));
        }
        let b = inner.read_data_block(block)?;
        if in_block >= b.raw.len() as u64 {
            return Err(origin.corrupt(
                block,
                format!("offset {in_block} is past the {}-byte block", b.raw.len()),
            ));
        }
        Ok(DataCursor {
            block: b.raw,
            block_offset: block,
            pos: in_block as usize,
            next_block: b.next,
        })
    }

    /// A cursor before the first Data block.
    pub(crate) fn start() -> Self {
        DataCursor {
            block: Vec::new(),
            block_offset: 8,
            pos: 0,
            next_block: 8,
        }
    }

    /// File offset of the current block.
    pub(crate) fn offset(&self) -> u64 {
        self.block_offset
    }

    /// Offset of the current block, and of the next fragment in it; a fresh
    /// block is loaded first if the current one is exhausted.
    pub(crate) fn next_fragment(&mut self, inner: &Inner) -> Result<Option<Fragment>, Error> {
        Ok(self.next_located(inner)?.map(|(f, ..)| f))
    }

    /// Like `next_fragment`, also returning the block offset, the offset in
    /// the block and the encoded length.
    pub(crate) fn next_located(
        &mut self,
        inner: &Inner,
    ) -> Result<Option<(Fragment, u64, u64, u64)>, Error> {
        let origin = inner.origin(Component::Data);
        if self.pos >= self.block.len() {
            if self.next_block >= inner.data_end() {
                return Ok(None);
            }
            let b = inner.read_data_block(self.next_block)?;
            if b.raw.is_empty() {
                return Err(origin.corrupt(self.next_block, "empty Data block"));
            }
            self.block = b.raw;
            self.block_offset = self.next_block;
            self.pos = 0;
            self.next_block = b.next;
        }
        let mut d = Decoder::new(&self.block, self.block_offset + 9, origin);
        d.seek(self.pos)?;
        let start = self.pos;
        let f = decode_fragment(&mut d)?;
        self.pos = d.position();
        Ok(Some((
            f,
            self.block_offset,
            start as u64,
            (self.pos - start) as u64,
        )))
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
            out: std::collections::VecDeque::new(),
            scratch: Vec::new(),
            done: false,
        }
    }

    /// Moves to the partition start `entry` points at (checked when read).
    fn position_at(&mut self, entry: &IndexEntry) -> Result<(), Error> {
        self.cursor = DataCursor::at(&self.table.inner, entry.data_block, entry.in_block)?;
        self.expect = Some((entry.key.clone(), entry.data_block));
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
                    if let Some((expected, block)) = self.expect.take()
                        && *key != expected
                    {
                        return Err(inner.origin(Component::Index).corrupt(
                            block,
                            format!("index entry for {expected} points at partition {key} in Data"),
                        ));
                    }
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
            match &mut self.slice {
                None => return Ok(Some(f)),
                Some(s) => {
                    if s.finished() && !matches!(f, Fragment::PartitionEnd) {
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
