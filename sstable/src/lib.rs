//! `sstable`: the immutable on-disk table format of the replica. A flushed
//! memtable's fragment stream goes in through a [`Writer`]; reads come out
//! as fragment streams again, through an [`Sstable`].
//!
//! The format (see `FORMAT.md`, version [`FORMAT_VERSION`]) has the
//! components users of Cassandra and ScyllaDB expect: Data (fragments in
//! crc32c-checked blocks, optionally LZ4-compressed), Index (partition key
//! to data position, with a clustering-block index for partitions larger
//! than 64 KiB), Summary (one sampled index entry per Index block, held in
//! memory), Filter (a bloom filter with a configurable false-positive
//! rate), Statistics, Digest (crc32c of Data) and TOC.
//!
//! * [`Writer`] validates the stream as it goes (an out-of-order stream is
//!   an [`Error::InvalidStream`], never a corrupt file), reports progress in
//!   bytes written, and commits atomically: temporary names, fdatasync,
//!   renames, the TOC last, directory fsyncs. Generations are reserved
//!   with an exclusive create, so concurrent writers never collide.
//! * [`SstableDirectory::open`] lists the committed sstables of a directory
//!   and removes what unfinished writes left behind.
//! * [`Sstable`] opens one (reading Summary, Filter and Statistics), and
//!   offers point lookups, clustering slices, full and partition-range
//!   scans as [`mutation::FragmentReader`]s, and
//!   [`make_reader_opt`](Sstable::make_reader_opt), which returns `None`
//!   instead of an empty reader when the key range or filter rules the
//!   partition out.
//! * [`Sstable::verify`] checks every checksum, ordering invariant and
//!   cross-component fact; every corruption error names the file, the
//!   component and the byte offset.
//!
//! Slices: a clustering slice of a partition keeps the partition start,
//! the static row, the rows inside the range, and the range tombstones
//! clipped to the range (a tombstone in force at the range start re-opens
//! there; one still in force at the end closes there).
//!
//! Open files: an open sstable reads its Data and Index files on demand
//! through a process-wide bounded cache of open files, which closes the
//! least recently used file when it is full and re-opens a closed one at
//! the next read, as RocksDB's table cache (`max_open_files`) and
//! Cassandra's file-handle cache do. There is no compaction yet, so a
//! replica accumulates thousands of sstables; holding two descriptors for
//! each would exhaust the process's limit (`ulimit -n`) and every later
//! flush would fail with `EMFILE`. [`set_max_open_files`] sets the
//! capacity (default [`DEFAULT_MAX_OPEN_FILES`]); [`open_files`] reports
//! how many are open. A file that cannot be re-opened (deleted, replaced
//! by another, or no descriptor free even after closing cached ones) makes
//! the read fail with [`Error::Io`] naming it, never return stale bytes.
//!
//! Direct I/O: the Data file is written with `O_DIRECT` where the file
//! system allows it, so it is not in the page cache; a full scan (the
//! [`Sstable::scan`] a compaction or `verify` runs) reads it ahead 1 MiB at a
//! time with `O_DIRECT` too, into an aligned buffer, as ScyllaDB reads
//! everything: each byte is read once, and the copy out of the page cache
//! had been most of a compaction thread's CPU. Such a scan holds one
//! descriptor of its own (outside the cache's capacity) while it lives;
//! where `O_DIRECT` is refused (tmpfs) or no descriptor is free, it reads
//! through the page cache, and [`set_direct_scans`] turns them off for the
//! process. Point and range reads always use the page cache.
//!
//! Devices: a writer whose [`WriterOptions::device`] is set charges every
//! byte of its files to that `device::Device` before writing it, and an
//! sstable opened with [`Sstable::open_on`] charges every byte it reads;
//! the charging thread blocks while the device's bandwidth is spent (the
//! replica's model of disks, shared by flushes, compaction and reads).
//!
//! The `sstable` command (crate `sstable-tool`) dumps (JSON lines),
//! describes and verifies files.
//!
//! Features: `testing` adds the crash-injection hook
//! `WriterOptions::crash_after`, for crash-safety tests.
//!
//! ```
//! use sstable::mutation::{Cell, DecoratedKey, Mutation, Timestamp};
//! use sstable::{Sstable, SstableDirectory, Writer, WriterOptions};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let key = DecoratedKey::from_bytes("user:42")?;
//! let m = Mutation::builder(key.clone())
//!     .cell("row-1", 0, Cell::live("hello", Timestamp::from_micros(1)))
//!     .build()?;
//!
//! let mut writer = Writer::create(dir.path(), WriterOptions::default())?;
//! for fragment in m.fragments() {
//!     writer.write(&fragment)?;
//! }
//! let committed = writer.commit()?;
//!
//! let listed = SstableDirectory::open(dir.path())?;
//! assert_eq!(listed.generations(), &[committed.generation]);
//! let table = Sstable::open(dir.path(), committed.generation)?;
//! assert_eq!(table.read_partition(&key)?, Some(m.fragments()));
//! table.verify()?;
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]

mod block;
mod bloom;
mod codec;
mod crc;
mod data_writer;
mod decoder;
mod directory;
mod error;
mod file_cache;
mod index;
mod index_cache;
mod reader;
mod slice;
mod statistics;
mod storage;
mod summary;
mod sync;
mod toc;
mod tracker;
mod verify;
mod writer;

/// The device model an sstable charges its I/O to
/// ([`WriterOptions::device`], [`Sstable::open_on`]). Re-exported, as is
/// `mutation`, so that one dependency line is enough.
pub use device;
pub use directory::{
    SstableDirectory, component_path, is_sstable_file_name, parse_component_path, remove_committed,
};
pub use error::{Component, Error, Result};
pub use file_cache::{DEFAULT_MAX_OPEN_FILES, max_open_files, open_files, set_max_open_files};
pub use index_cache::{
    DEFAULT_INDEX_CACHE_BUDGET, index_cache_budget, index_cache_bytes, set_index_cache_budget,
};
/// The data model an sstable stores: mutations, keys, ranges and fragment
/// streams.
pub use mutation;
pub use reader::{Sstable, SstableReader};
pub use statistics::Statistics;
pub use storage::{direct_scans, set_direct_scans};
pub use verify::VerifyReport;
pub use writer::{CommitStep, CommittedSstable, Progress, Writer, WriterOptions};

/// Version of the on-disk format written and read by this crate.
pub const FORMAT_VERSION: u32 = 1;

const DATA_MAGIC: &[u8; 4] = b"SSTD";
const INDEX_MAGIC: &[u8; 4] = b"SSTI";
const SUMMARY_MAGIC: &[u8; 4] = b"SSTS";
const FILTER_MAGIC: &[u8; 4] = b"SSTF";
const STATISTICS_MAGIC: &[u8; 4] = b"SSTT";

// Compile-time check: a flush thread owns a Writer; readers run on any
// thread and share one open Sstable.
const _: fn() = || {
    fn send<T: Send>() {}
    fn sync<T: Sync>() {}
    send::<Writer>();
    send::<Sstable>();
    sync::<Sstable>();
    send::<SstableReader>();
    send::<Error>();
    sync::<Error>();
};

// The README's example runs as a doc test, so it cannot go stale.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
