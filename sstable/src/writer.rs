//! The streaming writer: validates a fragment stream, writes Data and Index
//! through buffered I/O, and commits every component atomically.

use std::fmt;
use std::path::{Path, PathBuf};

use mutation::{DecoratedKey, Fragment, FragmentReader};

use crate::block::{ComponentFile, MAX_BLOCK, encode_block, single_block_component};
use crate::bloom::BloomFilter;
use crate::codec::encode_fragment;
use crate::data_writer::DataWriter;
use crate::directory::{
    component_path, remove_unfinished_generation, reserve_generation, sync_dir, temp_path,
};
use crate::error::{Component, Error, io_err};
use crate::statistics::Statistics;
use crate::summary::{Summary, SummaryEntry};
use crate::sync::Arc;
use crate::toc::{encode_digest, encode_toc};
use crate::tracker::Tracker;
use crate::{DATA_MAGIC, FILTER_MAGIC, INDEX_MAGIC, STATISTICS_MAGIC, SUMMARY_MAGIC};

/// Steps of [`Writer::commit`], in order. Used to name where an injected
/// crash stops the commit (`WriterOptions::crash_after`, with the
/// `testing` feature).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CommitStep {
    /// Data and Index are complete under temporary names and fdatasynced.
    DataSynced,
    /// Summary, Filter, Statistics and Digest are written under temporary
    /// names and fdatasynced.
    ComponentsSynced,
    /// Every component except the TOC has its final name; directory fsynced.
    ComponentsRenamed,
    /// The TOC text is in the marker file and fdatasynced.
    TocWritten,
    /// The marker is renamed to the TOC and the directory fsynced: committed.
    Committed,
}

impl CommitStep {
    /// Every step, in commit order.
    pub const ALL: [CommitStep; 5] = [
        CommitStep::DataSynced,
        CommitStep::ComponentsSynced,
        CommitStep::ComponentsRenamed,
        CommitStep::TocWritten,
        CommitStep::Committed,
    ];
}

/// Tuning of a [`Writer`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct WriterOptions {
    /// A Data block is closed before the fragment that would start once it
    /// holds at least this many raw bytes (default 16 KiB; 512 B to 16 MiB).
    pub block_size: usize,
    /// An Index block is closed once it holds at least this many bytes
    /// (default 4 KiB; 64 B to 16 MiB).
    pub index_block_size: usize,
    /// Compress Data blocks with LZ4 when it shrinks them (default on: in
    /// the benchmark it cost no write bandwidth and halved the file; see
    /// BENCHMARKS.md). A block LZ4 shrinks by less than 1/8 is stored raw,
    /// and then the next 15 blocks are stored raw without trying.
    pub compression: bool,
    /// Bloom filter false-positive rate, in (0, 0.5] (default 0.01).
    pub bloom_fp_rate: f64,
    /// Partitions whose fragments take more than this many raw bytes get a
    /// clustering-block index (default 64 KiB).
    pub large_partition_threshold: u64,
    /// Size of the write buffer of each of Data and Index (default 1 MiB).
    pub io_buffer: usize,
    /// Start write-back of Data and Index every this many bytes written
    /// to each (default 1 MiB; 0 is off; otherwise at least 4 KiB), so the
    /// page cache holds little of the file unsynced and the fdatasync at
    /// commit is short (RocksDB's `bytes_per_sync`). On Linux,
    /// `sync_file_range(SYNC_FILE_RANGE_WRITE)`, which does not wait for
    /// the disk; elsewhere nothing. Counted by
    /// [`Writer::writeback_requests`].
    pub bytes_per_sync: u64,
    /// Write the Data file with direct I/O (`O_DIRECT`, default `true`):
    /// its buffers go to the device with no copy into the page cache, which
    /// cost the kernel 1-2.6 s of CPU per GB written on the machines this
    /// was measured on, against 0.15 s direct (see `writeback::direct`);
    /// under a write load that copy took a third of two cores for flushes
    /// and compaction. [`WriterOptions::bytes_per_sync`] then applies to
    /// the Index alone. Where the file system refuses direct I/O the Data
    /// file is written through the page cache as with `false`. Reads are
    /// unaffected (they go through the page cache, and find the new file
    /// there only once read).
    pub direct_io: bool,
    /// The device the sstable's directory is on (default `None`: no
    /// model, nothing charged). Every byte written to the sstable's files
    /// is charged to it before it is written, in the writing thread,
    /// blocking the writer while the device's bandwidth is spent: the
    /// Data and Index buffers as they go to their files, the small
    /// components and the TOC at commit.
    pub device: Option<Arc<device::Device>>,
    /// The file system the sstable is written on (default the real one):
    /// every create, write, sync, rename and removal goes through it.
    pub fs: fs::FsHandle,
    /// Fault injection for crash-safety tests: stop the commit right after
    /// this step and return [`Error::InjectedCrash`], leaving the files
    /// exactly as a process crash at that point would (no cleanup). Only
    /// with the `testing` feature.
    #[cfg(feature = "testing")]
    pub crash_after: Option<CommitStep>,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            block_size: 16 << 10,
            index_block_size: 4 << 10,
            compression: true,
            bloom_fp_rate: 0.01,
            large_partition_threshold: 64 << 10,
            io_buffer: 1 << 20,
            bytes_per_sync: 1 << 20,
            direct_io: true,
            device: None,
            fs: fs::FsHandle::real(),
            #[cfg(feature = "testing")]
            crash_after: None,
        }
    }
}

impl WriterOptions {
    fn validate(&self) -> Result<(), Error> {
        let check = |name, ok: bool, value: String, expected| {
            if ok {
                Ok(())
            } else {
                Err(Error::InvalidOption {
                    name,
                    value,
                    expected,
                })
            }
        };
        check(
            "block_size",
            (512..=16 << 20).contains(&self.block_size),
            self.block_size.to_string(),
            "512 to 16777216 bytes",
        )?;
        check(
            "index_block_size",
            (64..=16 << 20).contains(&self.index_block_size),
            self.index_block_size.to_string(),
            "64 to 16777216 bytes",
        )?;
        check(
            "bloom_fp_rate",
            self.bloom_fp_rate > 0.0 && self.bloom_fp_rate <= 0.5,
            self.bloom_fp_rate.to_string(),
            "a rate in (0, 0.5]",
        )?;
        check(
            "io_buffer",
            (4096..=256 << 20).contains(&self.io_buffer),
            self.io_buffer.to_string(),
            "4096 to 268435456 bytes",
        )?;
        check(
            "bytes_per_sync",
            self.bytes_per_sync == 0 || self.bytes_per_sync >= 4096,
            self.bytes_per_sync.to_string(),
            "0 (off) or at least 4096 bytes",
        )
    }
}

/// Write progress, reported by [`Writer::on_progress`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Progress {
    /// Bytes handed to the Data and Index files so far (on-disk bytes:
    /// after compression), as [`Writer::bytes_written`].
    pub bytes_written: u64,
    /// Raw bytes of the fragments written out so far (before framing and
    /// compression), as [`Writer::raw_bytes`]. This is the measure to map
    /// back to memtable bytes when releasing "virtual dirty" memory, since
    /// it does not depend on how well the data compresses.
    pub raw_bytes: u64,
}

/// What a successful commit produced.
#[derive(Debug, Clone)]
pub struct CommittedSstable {
    /// The directory.
    pub dir: PathBuf,
    /// The new sstable's generation.
    pub generation: u64,
    /// Its statistics.
    pub statistics: Statistics,
}

/// Writes one sstable from a fragment stream.
///
/// Fragments are validated as they arrive: the first out-of-order fragment
/// returns [`Error::InvalidStream`] and poisons the writer (further writes
/// and the commit fail; drop or [`abort`](Writer::abort) it). Nothing is
/// visible to readers until [`commit`](Writer::commit) returns; dropping an
/// uncommitted writer removes its files.
pub struct Writer {
    dir: PathBuf,
    generation: u64,
    options: WriterOptions,
    data: Option<DataWriter>,
    index: Option<ComponentFile>,
    frame: Vec<u8>,
    raw_total: u64,
    index_block: Vec<u8>,
    index_block_first: Option<DecoratedKey>,
    summary: Summary,
    /// Upper estimate of the encoded Summary body.
    summary_bytes: u64,
    tracker: Tracker,
    fragments: u64,
    poisoned: Option<String>,
    finished: bool,
    progress: Option<Box<dyn FnMut(Progress) + Send>>,
}

impl fmt::Debug for Writer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Writer")
            .field("dir", &self.dir)
            .field("generation", &self.generation)
            .field("bytes_written", &self.bytes_written())
            .field("fragments", &self.fragments)
            .finish_non_exhaustive()
    }
}

impl Writer {
    /// Reserves a new generation in `dir` and starts writing.
    pub fn create(dir: impl AsRef<Path>, options: WriterOptions) -> Result<Self, Error> {
        Self::create_from(dir, 1, options)
    }

    /// As [`create`](Self::create), with a generation of at least `floor`:
    /// the first free one from `max(floor, largest present + 1)`. An owner
    /// whose sstables live in several directories keeps generations unique
    /// across them by handing every writer a floor from one counter.
    ///
    /// # Errors
    /// As `create`; [`Error::InvalidOption`] for a `floor` of `u64::MAX`.
    pub fn create_from(
        dir: impl AsRef<Path>,
        floor: u64,
        options: WriterOptions,
    ) -> Result<Self, Error> {
        options.validate()?;
        let dir = dir.as_ref().to_path_buf();
        let fs = options.fs.clone();
        let (generation, _marker) = reserve_generation(&*fs, &dir, floor)?;
        let opened = (|| {
            let data = DataWriter::create(
                &temp_path(&dir, generation, Component::Data),
                &options,
                &preamble(DATA_MAGIC),
            )?;
            let mut index = ComponentFile::create(
                &*fs,
                &temp_path(&dir, generation, Component::Index),
                options.io_buffer,
                options.bytes_per_sync,
                options.device.clone(),
            )?;
            index.write(&preamble(INDEX_MAGIC))?;
            Ok::<_, Error>((data, index))
        })();
        let (data, index) = match opened {
            Ok(v) => v,
            Err(e) => {
                let _ = remove_unfinished_generation(&*fs, &dir, generation);
                return Err(e);
            }
        };
        Ok(Writer {
            dir,
            generation,
            tracker: Tracker::new(options.large_partition_threshold, options.compression),
            options,
            data: Some(data),
            index: Some(index),
            frame: Vec::new(),
            raw_total: 0,
            index_block: Vec::new(),
            index_block_first: None,
            summary: Summary::default(),
            summary_bytes: 20,
            fragments: 0,
            poisoned: None,
            finished: false,
            progress: None,
        })
    }

    /// The generation this writer reserved.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Bytes handed to the Data and Index files so far (including bytes
    /// still in the write buffers, excluding the block being filled). Grows
    /// monotonically; the flush machinery polls it as write progress.
    pub fn bytes_written(&self) -> u64 {
        self.data.as_ref().map_or(0, DataWriter::len)
            + self.index.as_ref().map_or(0, ComponentFile::len)
    }

    /// Write-back requests made so far for Data and Index, one each time
    /// [`WriterOptions::bytes_per_sync`] more bytes reached a file (0 with
    /// the option off). Counted on every system; only Linux acts on them.
    pub fn writeback_requests(&self) -> u64 {
        self.data.as_ref().map_or(0, |d| d.writeback.requests())
            + self.index.as_ref().map_or(0, |i| i.writeback.requests())
    }

    /// Raw bytes of fragments accepted so far (before framing/compression).
    pub fn raw_bytes(&self) -> u64 {
        self.raw_total
    }

    /// Calls `f` each time a Data block is written out (every
    /// `block_size` raw bytes or so), with the bytes written so far.
    pub fn on_progress(&mut self, f: impl FnMut(Progress) + Send + 'static) {
        self.progress = Some(Box::new(f));
    }

    fn invalid(&mut self, reason: String) -> Error {
        self.poisoned = Some(reason.clone());
        Error::InvalidStream {
            fragment_index: self.fragments,
            reason,
        }
    }

    fn check_usable(&self) -> Result<(), Error> {
        if let Some(reason) = &self.poisoned {
            return Err(Error::InvalidStream {
                fragment_index: self.fragments,
                reason: format!("writer already failed: {reason}"),
            });
        }
        Ok(())
    }

    /// Closes the current Data block and reports progress.
    fn flush_block(&mut self) -> Result<(), Error> {
        let data = self.data.as_mut().expect("data file is open until commit");
        if data.block_len() == 0 {
            return Ok(());
        }
        data.close_block()?;
        if let Some(p) = self.progress.as_mut() {
            let bytes_written = self.data.as_ref().map_or(0, DataWriter::len)
                + self.index.as_ref().map_or(0, ComponentFile::len);
            p(Progress {
                bytes_written,
                raw_bytes: self.raw_total,
            });
        }
        Ok(())
    }

    fn flush_index_block(&mut self) -> Result<(), Error> {
        let Some(first) = self.index_block_first.take() else {
            return Ok(());
        };
        // The Summary is one block, read whole at open: refuse to grow it
        // past the block limit (one sampled key per Index block; reached
        // with about a thousand partitions of 64 KB keys) rather than
        // commit an sstable that no reader accepts.
        let entry_bytes = 8 + 3 + first.key().len() as u64 + 10;
        if self.summary_bytes + entry_bytes > u64::from(MAX_BLOCK) {
            return Err(Error::TooLarge {
                what: "summary (one partition key per Index block)",
                size: self.summary_bytes + entry_bytes,
                limit: u64::from(MAX_BLOCK),
            });
        }
        self.summary_bytes += entry_bytes;
        let index = self
            .index
            .as_mut()
            .expect("index file is open until commit");
        self.summary.entries.push(SummaryEntry {
            token: first.token().value(),
            key: first.key().as_bytes().to_vec(),
            index_offset: index.len(),
        });
        self.frame.clear();
        encode_block(&self.index_block, false, &mut self.frame);
        index.write(&self.frame)?;
        self.index_block.clear();
        self.tracker.stats.index_blocks += 1;
        Ok(())
    }

    /// Validates and writes one fragment.
    pub fn write(&mut self, fragment: &Fragment) -> Result<(), Error> {
        self.check_usable()?;
        if let Err(reason) = self.tracker.check(fragment) {
            return Err(self.invalid(reason));
        }
        let result = self.append(fragment);
        if let Err(e) = &result {
            self.poisoned = Some(e.to_string());
        }
        result?;
        self.fragments += 1;
        Ok(())
    }

    /// Encodes `fragment` into the open Data block, closing it first when it
    /// is full, and records it. A partition end (one byte) never opens a
    /// block: it stays with the fragment before it, so a point read of a
    /// partition that fills its block reads that block only, not the next
    /// one for the end alone.
    fn append(&mut self, fragment: &Fragment) -> Result<(), Error> {
        let limit = MAX_BLOCK as usize;
        if !matches!(fragment, Fragment::PartitionEnd)
            && self
                .data
                .as_ref()
                .is_some_and(|d| d.block_len() >= self.options.block_size)
        {
            self.flush_block()?;
        }
        let (block_start, in_block, len) = loop {
            let data = self.data.as_mut().expect("data file is open until commit");
            let (block_start, in_block) = (data.block_start(), data.block_len());
            let buf = data.buf();
            let before = buf.len();
            encode_fragment(fragment, buf);
            let len = buf.len() - before;
            if in_block + len <= limit {
                break (block_start, in_block, len);
            }
            buf.truncate(before);
            if in_block == 0 {
                return Err(Error::TooLarge {
                    what: "fragment",
                    size: len as u64,
                    limit: limit as u64,
                });
            }
            self.flush_block()?;
        };
        let entry = self.tracker.record(
            fragment,
            block_start,
            in_block as u64,
            self.raw_total,
            len as u64,
        );
        self.raw_total += len as u64;
        if matches!(fragment, Fragment::PartitionEnd)
            && self
                .data
                .as_ref()
                .is_some_and(|d| d.block_len() >= self.options.block_size)
        {
            // Full with its partition's end: closed now, as the next
            // fragment would have closed it, so `bytes_written` counts it
            // before the next partition starts (compaction cuts its
            // outputs there).
            self.flush_block()?;
        }
        if let Some(entry) = entry {
            if self.index_block_first.is_none() {
                self.index_block_first = Some(entry.key.clone());
            }
            entry.encode(&mut self.index_block);
            if self.index_block.len() >= self.options.index_block_size {
                self.flush_index_block()?;
            }
        }
        Ok(())
    }

    /// Writes every fragment `reader` produces, stopping at the first error.
    pub fn write_all(&mut self, reader: &mut dyn FragmentReader) -> Result<(), Error> {
        loop {
            let next = reader.next().map_err(|e| {
                self.poisoned = Some(e.to_string());
                Error::Source(e)
            })?;
            match next {
                Some(f) => self.write(&f)?,
                None => return Ok(()),
            }
        }
    }

    /// With the `testing` feature, stops the commit after `step` if the
    /// options ask for it; without it, does nothing.
    fn crash_point(&mut self, step: CommitStep) -> Result<(), Error> {
        #[cfg(not(feature = "testing"))]
        let _ = step;
        #[cfg(feature = "testing")]
        if self.options.crash_after == Some(step) {
            // Leave every file as it is, as a crash would.
            self.finished = true;
            return Err(Error::InjectedCrash(step));
        }
        Ok(())
    }

    /// Finishes the sstable and commits it atomically (see FORMAT.md,
    /// "Commit protocol"). On error nothing is committed and the writer's
    /// files are removed (the TOC first, should the error come from the
    /// directory fsync that follows its rename).
    pub fn commit(mut self) -> Result<CommittedSstable, Error> {
        match self.commit_inner() {
            Ok(stats) => {
                self.finished = true;
                Ok(CommittedSstable {
                    dir: self.dir.clone(),
                    generation: self.generation,
                    statistics: stats,
                })
            }
            Err(e) => {
                if !self.finished {
                    self.finished = true;
                    // If the TOC rename happened but the directory fsync
                    // after it failed, un-commit first: the TOC goes before
                    // the components it names.
                    let toc = component_path(&self.dir, self.generation, Component::Toc);
                    let fs = &*self.options.fs;
                    let _ = fs.remove_file(&toc);
                    let _ = remove_unfinished_generation(fs, &self.dir, self.generation);
                }
                Err(e)
            }
        }
    }

    fn commit_inner(&mut self) -> Result<Statistics, Error> {
        self.check_usable()?;
        if !self.tracker.between_partitions() {
            return Err(self.invalid("the stream ended inside a partition".to_owned()));
        }
        self.flush_block()?;
        self.flush_index_block()?;
        let data = self.data.take().expect("data file is open until commit");
        let index = self.index.take().expect("index file is open until commit");
        self.tracker.stats.data_blocks = data.blocks;
        self.tracker.stats.data_raw_bytes = data.raw_bytes;
        self.tracker.stats.index_size = index.len();
        self.summary.index_size = index.len();
        let (data_size, digest) = data.finish()?;
        self.tracker.stats.data_size = data_size;
        index.finish()?;
        self.crash_point(CommitStep::DataSynced)?;

        let mut filter =
            BloomFilter::new(self.tracker.hashes.len() as u64, self.options.bloom_fp_rate);
        for &h in &self.tracker.hashes {
            filter.insert(h);
        }
        let dir = self.dir.clone();
        let generation = self.generation;
        let fs = self.options.fs.clone();
        let small = [
            (
                Component::Summary,
                single_block_component(SUMMARY_MAGIC, &self.summary.encode()),
            ),
            (
                Component::Filter,
                single_block_component(FILTER_MAGIC, &filter.encode()),
            ),
            (
                Component::Statistics,
                single_block_component(STATISTICS_MAGIC, &self.tracker.stats.encode()),
            ),
            (Component::Digest, encode_digest(digest).into_bytes()),
        ];
        for (component, bytes) in &small {
            // Written whole and synced at once: no write-back on the way.
            let mut f = ComponentFile::create(
                &*fs,
                &temp_path(&dir, generation, *component),
                4096,
                0,
                self.options.device.clone(),
            )?;
            f.write(bytes)?;
            f.finish()?;
        }
        self.crash_point(CommitStep::ComponentsSynced)?;

        for component in Component::ALL {
            if component == Component::Toc {
                continue;
            }
            let from = temp_path(&dir, generation, component);
            fs.rename(&from, &component_path(&dir, generation, component))
                .map_err(io_err("rename", &from))?;
        }
        sync_dir(&*fs, &dir)?;
        self.crash_point(CommitStep::ComponentsRenamed)?;

        let marker = crate::directory::temporary_toc_path(&dir, generation);
        {
            let file = fs
                .open(
                    &marker,
                    &fs::OpenOptions {
                        truncate: true,
                        ..fs::OpenOptions::write()
                    },
                )
                .map_err(io_err("open", &marker))?;
            let toc = encode_toc();
            device::charge_write(self.options.device.as_deref(), toc.len() as u64);
            file.write_all_at(toc.as_bytes(), 0)
                .map_err(io_err("write", &marker))?;
            file.sync_data().map_err(io_err("fdatasync", &marker))?;
        }
        self.crash_point(CommitStep::TocWritten)?;

        let toc = component_path(&dir, generation, Component::Toc);
        fs.rename(&marker, &toc)
            .map_err(io_err("rename", &marker))?;
        sync_dir(&*fs, &dir)?;
        self.crash_point(CommitStep::Committed)?;
        Ok(self.tracker.stats.clone())
    }

    /// Abandons the write and removes its files (temporary components first,
    /// the generation's marker last).
    pub fn abort(mut self) -> Result<(), Error> {
        self.finished = true;
        self.data = None;
        self.index = None;
        remove_unfinished_generation(&*self.options.fs, &self.dir, self.generation)
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if !self.finished {
            self.data = None;
            self.index = None;
            let _ = remove_unfinished_generation(&*self.options.fs, &self.dir, self.generation);
        }
    }
}

fn preamble(magic: &[u8; 4]) -> [u8; 8] {
    let mut p = [0u8; 8];
    p[..4].copy_from_slice(magic);
    p[4..].copy_from_slice(&crate::FORMAT_VERSION.to_le_bytes());
    p
}
