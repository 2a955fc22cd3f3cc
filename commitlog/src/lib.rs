//! `commitlog`: the write-ahead log of the replica. Every mutation is
//! appended here, framed and checksummed, before it reaches a memtable; on
//! start the log is replayed so that nothing acknowledged is lost; once a
//! table's memtable is flushed, the segments that only it still needed are
//! deleted.
//!
//! * Fixed-size segment files (default 32 MiB) named by a monotonically
//!   increasing id, each with a checksummed header; entries framed with a
//!   length, a CRC-32C of the length and the segment id, the payload and a
//!   CRC-32C of the payload (see "On-disk format" below).
//! * [`CommitLog::add`] from any number of threads: writers copy into one
//!   shared buffer, and one write-and-sync cycle at a time writes it out.
//!   [`SyncMode::Batch`] returns once an fdatasync covered the entry, and
//!   concurrent writers share one fdatasync (group commit): with a zero
//!   window the first waiting writer that finds no cycle running runs it
//!   for everyone queued (no thread handoff); otherwise the log's flusher
//!   thread does. A finished cycle wakes only the writers it covered (they
//!   wait on a slot of their cycle number's parity, not on the log's lock),
//!   so a sync does not wake the writers queued for the next one.
//!   [`SyncMode::Periodic`] returns at once (the entry is in the log's
//!   buffer; the log writes buffers out at once, during a running sync
//!   too, so a process crash loses only the last few milliseconds) or,
//!   with [`PeriodicAck::Written`], once the entry is written to its
//!   segment file by the same group-commit cycle with writes only (a
//!   process crash loses nothing acknowledged); it syncs at most once per
//!   interval, while writers go on (a machine crash loses at most about
//!   two intervals). In batch mode segments are written with direct I/O
//!   ([`Config::direct_io`]: no copy into the page cache, whose cost in
//!   kernel CPU starved writers under load); in periodic mode, where a
//!   direct write lasts as long as the device takes, through the page
//!   cache, and the log starts the kernel's write-back every
//!   [`Config::bytes_per_sync`] bytes (`sync_file_range` on Linux), so
//!   syncs stay short. [`CommitLog::add_batch`] appends several mutations, each its
//!   own entry, for one wait: a writer with many mutations pays one wakeup
//!   rather than one per mutation.
//! * [`CommitLog::add_async`] places the entry as `add` does and returns a
//!   [`Durable`] future for the wait: it resolves once the same
//!   group-commit cycle synced the entry (the flusher runs it; in periodic
//!   mode it is ready at once, or with [`PeriodicAck::Written`] once a
//!   cycle wrote the entry), so one
//!   thread can keep many writes in flight. It is runtime-agnostic (waker
//!   based, woken after the sync by whoever ran it); dropping it cancels
//!   only the wait.
//! * In batch mode, segments are made ahead of need ([`Preallocate`]): a
//!   background thread keeps one segment zero-filled at its full size and
//!   synced, so a segment switch is a rename and the group-commit
//!   fdatasyncs never allocate blocks.
//! * Bounded: a byte budget on unwritten buffers slows writers down when the
//!   disk is slow; a total size limit makes writers wait (with a timeout)
//!   and asks the owner, through [`CommitLog::set_flush_handler`], to flush
//!   the tables that hold the oldest segments, repeating the request until
//!   the segments are freed.
//! * Retirement by [`CommitLog::discard_flushed`]: each appended entry pins
//!   its segment until the memtable holding it hands it back with its
//!   [`ReplayPositionSet`], whatever order entries reached memtables in
//!   (replayed entries are released by [`CommitLog::discard_completed`]);
//!   [`CommitLog::drop_table`] logs a drop so replay cannot resurrect a
//!   dropped table.
//! * [`CommitLog::open`] replays every segment in order. A torn last entry
//!   in the segments written last ends its segment cleanly; any other
//!   damage (a truncated segment included, the newest too: segments are
//!   created at their full size, so no crash leaves a short one) makes
//!   `open` fail with
//!   [`Error::Corrupt`], naming the segment, offset and what was wrong,
//!   before anything is replayed or changed on disk, unless
//!   [`Config::on_corruption`] is [`CorruptionPolicy::Skip`]: then the rest
//!   of a damaged segment is skipped and reported (segment, byte range,
//!   entries) and the segment set aside. Drops are also kept in a side
//!   file, so a skip never brings a dropped table's entries back.
//!   [`replay`] reads a directory the skip way, read-only; [`check`] tells,
//!   read-only, whether `open` would refuse it. A payload that passes its
//!   checksums but does not decode is damage too; `check` finds it before
//!   anything is replayed, `open` (which decodes each entry once, as it
//!   hands it over) only when it reaches it. No input makes replay panic.
//!
//! The largest entry is half a segment less 20 bytes of framing; larger
//! mutations are refused with [`Error::EntryTooLarge`] before anything is
//! written. With the default 32 MiB segments this admits every mutation
//! `mutation` accepts (`mutation::limits::MAX_MUTATION_SIZE`, which leaves
//! room for the framing); a smaller segment size lowers it, and a write
//! path then meets it here, before anything reaches a memtable.
//!
//! ```
//! use commitlog::{CommitLog, Config, SyncMode};
//! use mutation::{Cell, DecoratedKey, Mutation, Timestamp};
//! use std::time::Duration;
//!
//! let dir = tempfile::tempdir()?;
//! let mut config = Config::default();
//! config.segment_size = 1 << 20;
//! config.total_size_limit = 16 << 20;
//! config.sync = SyncMode::Batch(Duration::ZERO);
//! let m = Mutation::builder(DecoratedKey::from_bytes("user:1")?)
//!     .cell("name", 0, Cell::live("ada", Timestamp::from_micros(1)))
//!     .build()?;
//!
//! let (log, report) = CommitLog::open(dir.path(), config.clone(), |_, _, _| {})?;
//! assert_eq!(report.entries, 0);
//! let pos = log.add(7, &m)?; // durable when it returns (batch mode)
//! drop(log); // as if the process stopped here, before any flush
//!
//! let mut replayed = Vec::new();
//! let (log, report) = CommitLog::open(dir.path(), config, |table, m, p| replayed.push((table, m, p)))?;
//! assert_eq!(replayed, vec![(7, m.clone(), pos)]);
//! assert_eq!((report.entries, report.corrupt_segments), (1, 0));
//! // The owner flushed table 7's replayed memtable: its segment may go.
//! log.discard_completed(7, pos);
//! // Entries of this run are handed back exactly, by the memtable holding them.
//! let held: commitlog::ReplayPositionSet = [log.add(7, &m)?].into_iter().collect();
//! log.discard_flushed(7, &held);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # On-disk format (version 1)
//!
//! Little-endian; checksums are the standard CRC-32C (Castagnoli, initial
//! value and final XOR `0xffffffff`: `crc32c(b"123456789") == 0xe3069283`).
//!
//! ```text
//! drops    = CommitLog-1-drops: the last drop of every table still
//!            relevant (see `format.rs`), replaced whole at every drop
//! file     = CommitLog-1-<segment id>.log, created at its full size (zeros;
//!            a preallocated one is made as CommitLog-1-next.reserve and
//!            renamed when it becomes the active segment)
//! segment  = header entry* zero-fill
//! header   = magic "RPCL" | version:u32 (=1) | segment id:u64
//!          | segment size:u32 | crc32c(previous 20 bytes):u32     (24 bytes)
//! entry    = length:u32 | segment id:u64 | crc32c(length, id):u32  (16 bytes)
//!          | payload (length bytes) | crc32c(payload):u32          (4 bytes)
//! payload  = kind:u8 | table id:u64 | body
//!            kind 1: body = Mutation::encode (mutation's own versioned form)
//!            kind 2: body empty: the table was dropped here
//! ```
//!
//! A length is trusted only once its own checksum holds. The segment id in
//! every entry header makes bytes of another segment (a reused file)
//! recognisable as stale rather than damaged; this version never reuses
//! files (retired segments are deleted), so stale bytes only appear if a
//! later version recycles. Zeros after the last entry mark where writing
//! stopped; see [`replay`] for how a stop is classified (clean end, torn
//! tail, damage).
#![forbid(unsafe_code)]

mod check;
mod config;
mod error;
mod format;
mod log;
mod positions;
mod replay;
mod storage;
mod sync;

pub use crate::check::{CheckReport, check, check_with};
pub use crate::config::{
    Config, CorruptionPolicy, DirectIo, MAX_SEGMENT_SIZE, MIN_SEGMENT_SIZE, PeriodicAck,
    Preallocate, SyncMode,
};
pub use crate::error::Error;
pub use crate::log::{CommitLog, Durable, FlushHandler, FlushRequest, LogStats, MutationRef};
pub use crate::positions::ReplayPositionSet;
pub use crate::replay::{Damage, ReplayReport, TornTail, replay};
/// The device model the log charges its I/O to (`Config::device`).
/// Re-exported, as is `mutation`, so that one dependency line is enough.
pub use device;
/// The data model: the mutations the log stores and replays.
pub use mutation;

/// Identifies a table in the log. The owner assigns ids; the log only
/// stores them.
pub type TableId = u64;

/// Where an entry sits in the log: its segment id and byte offset. Positions
/// order entries in the order they were appended (segment ids only grow,
/// across restarts too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ReplayPosition {
    /// The segment id.
    pub segment: u64,
    /// Byte offset of the entry in the segment.
    pub offset: u32,
}

impl ReplayPosition {
    /// A position.
    pub const fn new(segment: u64, offset: u32) -> Self {
        Self { segment, offset }
    }
}

impl std::fmt::Display for ReplayPosition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.segment, self.offset)
    }
}
