//! Opening: the TOC, Statistics, Summary and Filter are read and checked
//! against each other and against the sizes of Data and Index.

use std::path::{Path, PathBuf};

use bytes::Bytes;
use mutation::DecoratedKey;

use super::{Inner, Sstable, slot};
use crate::block::{
    PREAMBLE_LEN, SINGLE_BLOCK_BODY_OFFSET, check_preamble, read_single_block_component,
};
use crate::bloom::BloomFilter;
use crate::directory::{component_path, parse_component_path};
use crate::error::{Component, Error, io_err};
use crate::index_cache::IndexCache;
use crate::statistics::Statistics;
use crate::storage::{FileSource, MemSource, Source};
use crate::summary::Summary;
use crate::sync::{Arc, AtomicU64};
use crate::toc::check_toc;
use crate::{DATA_MAGIC, FILTER_MAGIC, INDEX_MAGIC, STATISTICS_MAGIC, SUMMARY_MAGIC};

/// Largest TOC accepted (1 MiB): it lists seven file names.
const MAX_TOC_LEN: usize = 1 << 20;

impl Sstable {
    /// Opens the committed sstable `generation` in `dir`. Its reads are
    /// charged to no device (see [`open_on`](Self::open_on)).
    pub fn open(dir: impl AsRef<Path>, generation: u64) -> Result<Self, Error> {
        Self::open_on(dir, generation, None)
    }

    /// Opens the committed sstable `generation` in `dir`, on `device`:
    /// every byte read from its files, at open and by its readers (point
    /// lookups, scans, compaction's reads, the verifier), is charged to the
    /// device before it is read, blocking the reader while the device's
    /// bandwidth is spent. `None` charges nothing.
    pub fn open_on(
        dir: impl AsRef<Path>,
        generation: u64,
        device: Option<Arc<device::Device>>,
    ) -> Result<Self, Error> {
        Self::open_with(dir, generation, device, &fs::FsHandle::real())
    }

    /// As [`open_on`](Self::open_on), on the file system `fs`: the files
    /// are opened (and opened again by the cache of open files) through it.
    pub fn open_with(
        dir: impl AsRef<Path>,
        generation: u64,
        device: Option<Arc<device::Device>>,
        fs: &fs::FsHandle,
    ) -> Result<Self, Error> {
        let dir = dir.as_ref();
        let toc = component_path(dir, generation, Component::Toc);
        if fs.kind(&toc).map_err(io_err("stat", &toc))?.is_none() {
            return Err(Error::NotFound {
                dir: dir.to_path_buf(),
                generation,
            });
        }
        let mut paths = Vec::new();
        let mut sources: Vec<Arc<dyn Source>> = Vec::new();
        for c in Component::ALL {
            let path = component_path(dir, generation, c);
            let source = match FileSource::open(fs, &path, device.clone()) {
                Ok(s) => s,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(Error::MissingComponent {
                        dir: dir.to_path_buf(),
                        generation,
                        component: c,
                    });
                }
                Err(e) => return Err(io_err("open", &path)(e)),
            };
            sources.push(Arc::new(source));
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
            data_block_guess: 0,
            index_cache: IndexCache::default(),
        };
        let read_all = |inner: &Inner, c: Component| -> Result<Vec<u8>, Error> {
            let src = inner.source(c);
            let len = usize::try_from(src.len())
                .unwrap_or(usize::MAX)
                .min(MAX_TOC_LEN);
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
        let stats = Statistics::decode(
            &body,
            SINGLE_BLOCK_BODY_OFFSET,
            inner.origin(Component::Statistics),
        )?;
        let body = read_single_block_component(
            inner.source(Component::Summary),
            SUMMARY_MAGIC,
            inner.origin(Component::Summary),
        )?;
        let summary = Summary::decode(
            &body,
            SINGLE_BLOCK_BODY_OFFSET,
            inner.origin(Component::Summary),
        )?;
        let body = read_single_block_component(
            inner.source(Component::Filter),
            FILTER_MAGIC,
            inner.origin(Component::Filter),
        )?;
        let filter = BloomFilter::decode(
            &body,
            SINGLE_BLOCK_BODY_OFFSET,
            inner.origin(Component::Filter),
        )?;
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
                PREAMBLE_LEN,
                format!(
                    "Summary has {} entries but Statistics counts {} Index blocks",
                    summary.entries.len(),
                    stats.index_blocks
                ),
            ));
        }
        if (stats.partitions == 0) != summary.entries.is_empty() {
            return Err(inner.origin(Component::Summary).corrupt(
                PREAMBLE_LEN,
                format!(
                    "Summary has {} entries for {} partitions",
                    summary.entries.len(),
                    stats.partitions
                ),
            ));
        }
        let decorate = |b: &[u8], c: Component| {
            DecoratedKey::from_bytes(Bytes::copy_from_slice(b))
                .map_err(|e| inner.origin(c).corrupt(PREAMBLE_LEN, e.to_string()))
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
                    PREAMBLE_LEN,
                    format!("summary entry for {key} stores token {}", e.token),
                ));
            }
        }
        inner.first = first;
        inner.last = last;
        inner.data_block_guess = super::data_block_guess(&stats);
        inner.index_cache = IndexCache::new(summary.entries.len());
        inner.stats = stats;
        inner.summary = summary;
        inner.filter = filter;
        inner.release_decoded_components()?;
        Ok(Sstable {
            inner: Arc::new(inner),
        })
    }
}
