//! Configuration: segment size, sync mode, size limits, timeouts.

use std::time::Duration;

use crate::Error;
use crate::format;
use crate::sync::PlainArc;

/// The smallest segment size accepted (tests use small segments).
pub const MIN_SEGMENT_SIZE: u32 = 4096;
/// The largest segment size accepted: offsets are `u32`.
pub const MAX_SEGMENT_SIZE: u32 = 1 << 31;

/// When an append is durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncMode {
    /// `add` returns once the entry is in the log's buffer
    /// ([`PeriodicAck::Buffered`], the default: the log writes buffers out
    /// at once, also while an fdatasync runs, so a process crash loses only
    /// the entries appended in about the last few milliseconds) or once it
    /// is written to its segment file ([`PeriodicAck::Written`]: a process
    /// crash loses no acknowledged entry), see [`Config::periodic_ack`].
    /// The log fdatasyncs at most once per interval, with writes going on
    /// meanwhile; a crash of the machine loses at most about one interval
    /// of writes while the disk keeps up. When it does not (the oldest
    /// entry not yet durable is more than two intervals old), `add` waits
    /// until a sync covers its entry, so the loss stays bounded by about
    /// two intervals (Cassandra's periodic sync lag block);
    /// [`crate::LogStats`] counts these waits.
    Periodic(Duration),
    /// `add` returns only once an fdatasync has covered the entry.
    /// Concurrent writers share one fdatasync (group commit): entries added
    /// while a sync runs are covered by the next one. The next sync starts
    /// no sooner than `window` after the previous one started; a window of
    /// zero syncs as soon as the previous sync ends.
    Batch(Duration),
}

/// Commit log settings. Start from [`Config::default`] and change fields.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// Size of every segment file in bytes (default 32 MiB;
    /// [`MIN_SEGMENT_SIZE`]..=[`MAX_SEGMENT_SIZE`]). The largest entry is
    /// half a segment less 20 bytes of framing.
    pub segment_size: u32,
    /// When appends are durable (default `Periodic(10 s)`, as Cassandra and
    /// ScyllaDB default).
    pub sync: SyncMode,
    /// Total bytes of segment files the log may keep on disk (default
    /// 8 GiB, Cassandra's cap). At half of it the log asks its owner to
    /// flush the tables holding the oldest segments; at the limit writers
    /// wait for a segment to be freed. At least two segments.
    pub total_size_limit: u64,
    /// Bytes of appended entries not yet written to the file that the log
    /// may hold; writers wait beyond it, so a slow disk slows writers
    /// instead of growing memory. `None` (default): the largest entry plus
    /// 1 MiB. At least the largest framed entry.
    pub buffer_budget: Option<usize>,
    /// How long a writer waits for buffer space or for a segment to be
    /// freed before failing (default 10 s).
    pub write_timeout: Duration,
    /// While writers wait for a segment to be freed, flush requests are
    /// repeated this often (default 100 ms).
    pub flush_request_interval: Duration,
    /// Whether segments are zero-filled ahead of need (default
    /// [`Preallocate::Auto`]: in batch mode only).
    pub preallocate: Preallocate,
    /// Periodic mode: while a periodic fdatasync runs (the flusher blocked
    /// in it), a writer thread writes the pending buffers out (a `write`,
    /// no sync) this often (default 2 ms; zero: no such thread, and with
    /// [`PeriodicAck::Buffered`] entries wait until a writer reaches
    /// [`Config::buffer_budget`]). Outside syncs the flusher writes buffers
    /// out as soon as entries arrive. With [`PeriodicAck::Buffered`] a
    /// process crash (SIGKILL, a panic that aborts) so loses only entries
    /// appended within about this interval before it; with
    /// [`PeriodicAck::Written`] blocking writers write their own entries
    /// out, and the thread serves [`crate::CommitLog::add_async`]'s
    /// futures, which no thread leads.
    pub write_interval: Duration,
    /// Every this many bytes written to a segment, the log starts the
    /// kernel's write-back of them without waiting
    /// (`sync_file_range(SYNC_FILE_RANGE_WRITE)` on Linux, nothing
    /// elsewhere), so the page cache holds at most about this much unsynced
    /// log data per segment and a periodic fdatasync stays short (RocksDB's
    /// `wal_bytes_per_sync`). Default 1 MiB; 0 turns it off. Periodic mode
    /// only: batch mode fdatasyncs every write cycle anyway. Durability
    /// still rests on the fdatasyncs alone.
    pub bytes_per_sync: u64,
    /// When segments are written with direct I/O (`O_DIRECT`; default
    /// [`DirectIo::Auto`]: in batch mode only). Each buffer then goes from
    /// the log's memory to the device with no copy into the page cache,
    /// which cost the kernel 1-2.6 s of CPU per GB written on the machines
    /// this was measured on (0.15 s with direct I/O; see
    /// `writeback::direct`). Where the file system refuses it, or the
    /// segment size is not a multiple of 4 KiB, the log writes through the
    /// page cache, and [`Config::bytes_per_sync`] applies; with direct I/O
    /// there is no write-back to start. Durability rests on the fdatasyncs
    /// either way.
    pub direct_io: DirectIo,
    /// Periodic mode: when `add` returns (default
    /// [`PeriodicAck::Buffered`]; see [`PeriodicAck`]).
    pub periodic_ack: PeriodicAck,
    /// What [`crate::CommitLog::open`] does when replay meets damage
    /// (default [`CorruptionPolicy::Stop`]).
    pub on_corruption: CorruptionPolicy,
    /// The device the log's directory is on (default `None`: no model,
    /// nothing charged). Every byte written to a segment (each buffer the
    /// log writes out, and the zeros of a preallocated reserve) is charged
    /// to it before the write, in the thread writing, which holds no lock
    /// then (the log's state lock is released for its I/O): writers that
    /// only append to the buffers go on until the buffer budget, as with a
    /// slow disk. Replay's reads are charged too. The drop side file (a
    /// few bytes per table drop, written under the drops lock) is not.
    pub device: Option<PlainArc<device::Device>>,
    /// The file system the log's directory is on (default the real one):
    /// every segment's creation, write, sync, rename and removal, the drop
    /// side file and replay's reads go through it.
    pub fs: fs::FsHandle,
}

/// What opening the log does with damage found by replay.
///
/// A *torn tail* (within a segment at its full size, the last entry's
/// bytes stop with zeros behind them; or a segment has no header and holds
/// nothing) is what a crash in the middle of a write leaves; it is expected
/// in the segments written last (the newest two segments that have a
/// header, and any header-less ones after them: one write-and-sync cycle
/// spans at most one segment switch with the default buffer budget) and is
/// never damage there. Anything else is damage: a checksum that fails with
/// data after it, a zeroed range followed by data, a length out of range, a
/// payload that does not decode, a bad segment header, a torn tail that is
/// not among the last written, and a segment file shorter than the size its
/// header gives, in any segment, the newest included (segments are created
/// at their full size, so no crash leaves a short one).
/// [`crate::check`] tells, without changing anything, whether `Stop` would
/// refuse a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CorruptionPolicy {
    /// Replay stops at the first damage: `open` fails with
    /// [`crate::Error::Corrupt`], naming the segment, the offset and what
    /// was wrong, before any entry is handed over and without changing
    /// anything on disk, so an operator can copy the files away first
    /// (Cassandra's default: replay refuses corruption unless told to
    /// skip it). One kind of damage is found only as replay reaches it: a
    /// payload that passes its checksums but does not decode (no disk
    /// damage makes one; a bug or another build's mutation encoding can).
    /// `open` decodes each entry once, as it hands it over, so it fails
    /// there after handing over the entries before it, still changing
    /// nothing on disk; [`crate::check`] decodes and refuses it before
    /// anything is replayed.
    #[default]
    Stop,
    /// Replay skips the rest of a damaged segment and goes on; what was
    /// skipped is reported ([`crate::ReplayReport::damage`]: segment, byte
    /// range and the entries found in it) and the damaged segment is set
    /// aside (`….log.damaged`) once the entries before the damage are
    /// flushed. A table drop is never lost to a skip: drops are also kept
    /// in a side file (see [`crate::CommitLog::drop_table`]), so a dropped
    /// table's entries are refused even when the damage hides the drop
    /// record.
    Skip,
}

/// Whether the log keeps the next segment zero-filled ahead of need.
///
/// A background thread writes a reserve segment full of zeros at its full
/// size and syncs it; a segment switch then only renames it to its id.
/// Group-commit fdatasyncs into it never allocate blocks (on ext4 an
/// fdatasync over freshly allocated blocks also writes their metadata;
/// measured here, a 32 KiB write plus fdatasync takes 135 µs at p50 into a
/// zero-filled file and 207 µs into a sparse one). The price is writing
/// every segment twice, as PostgreSQL does for its WAL files; it pays where
/// syncs are frequent, in batch mode. A writer that needs a segment while
/// no reserve is ready creates a sparse one itself rather than wait. The
/// reserve counts against [`Config::total_size_limit`]; an unused one is
/// removed at close (and a leftover one at open).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Preallocate {
    /// In [`SyncMode::Batch`] only (periodic mode syncs once per interval,
    /// where block allocation costs nothing worth writing twice for).
    #[default]
    Auto,
    /// In every sync mode.
    Always,
    /// Never: segments are created sparse when needed.
    Never,
}

/// When a periodic-mode append is acknowledged ([`Config::periodic_ack`]).
///
/// Measured with replica-stress on 2 vCPUs (BENCHMARKS.md, 2026-12-03): 64
/// blocking writers of 1 KiB rows ran at 0.53-0.60x the op rate with
/// `Written` through the page cache and 0.45x with a direct log (each
/// acknowledgement a sleep and a wake-up of its thread behind the group's
/// write), 100 writers of 128 KiB rows at 1.00x with a direct log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PeriodicAck {
    /// Once the entry is in the log's buffer (the default, as ScyllaDB's
    /// periodic mode): no wait. The log writes buffers out at once, and
    /// every [`Config::write_interval`] while an fdatasync runs, so a
    /// process crash loses only what was appended in about the last few
    /// milliseconds, while the writes keep up: with direct I/O a write
    /// lasts as long as the device takes (77 ms seen on a loaded disk), so
    /// [`DirectIo::Auto`] keeps periodic mode on the page cache.
    #[default]
    Buffered,
    /// Once the entry is written to its segment file (a `write`, no
    /// fdatasync; with direct I/O, one that reached the device), by a cycle
    /// shared with every writer queued behind the previous one, as in batch
    /// mode, led by the first waiting writer: a process crash loses no
    /// acknowledged entry, whatever the disk's latency (RocksDB's WAL
    /// without `sync` makes the same promise).
    Written,
}

/// When the log writes its segments with direct I/O
/// ([`Config::direct_io`]).
///
/// In batch mode an acknowledgement waits for an fdatasync anyway, and
/// direct I/O saves the page cache's copy. In periodic mode a direct write
/// lasts as long as the device takes: with [`PeriodicAck::Buffered`] the
/// entries appended meanwhile stay in the process (what a process crash
/// loses grows from milliseconds to the device's latency), and with
/// [`PeriodicAck::Written`] each acknowledgement waits for the device (one
/// writer thread appending 1 KiB entries: 5,000-7,000 appends/s against
/// about 150,000 through the page cache; BENCHMARKS.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DirectIo {
    /// In [`SyncMode::Batch`] only.
    #[default]
    Auto,
    /// In every sync mode.
    Always,
    /// Never: segments are written through the page cache.
    Never,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            segment_size: 32 << 20,
            sync: SyncMode::Periodic(Duration::from_secs(10)),
            total_size_limit: 8 << 30,
            buffer_budget: None,
            write_timeout: Duration::from_secs(10),
            flush_request_interval: Duration::from_millis(100),
            preallocate: Preallocate::Auto,
            on_corruption: CorruptionPolicy::Stop,
            write_interval: Duration::from_millis(2),
            bytes_per_sync: 1 << 20,
            direct_io: DirectIo::Auto,
            periodic_ack: PeriodicAck::Buffered,
            device: None,
            fs: fs::FsHandle::real(),
        }
    }
}

impl Config {
    /// Whether a periodic-mode append waits for the write of its entry
    /// ([`PeriodicAck::Written`] in [`SyncMode::Periodic`]).
    pub fn periodic_acks_written(&self) -> bool {
        matches!(self.sync, SyncMode::Periodic(_)) && self.periodic_ack == PeriodicAck::Written
    }

    /// Whether this configuration writes segments with direct I/O (where
    /// the file system allows it).
    pub fn uses_direct_io(&self) -> bool {
        match self.direct_io {
            DirectIo::Auto => matches!(self.sync, SyncMode::Batch(_)),
            DirectIo::Always => true,
            DirectIo::Never => false,
        }
    }

    /// Whether this configuration keeps a zero-filled reserve segment.
    pub fn preallocates(&self) -> bool {
        match self.preallocate {
            Preallocate::Auto => matches!(self.sync, SyncMode::Batch(_)),
            Preallocate::Always => true,
            Preallocate::Never => false,
        }
    }

    /// The largest payload accepted (table id, kind and encoded mutation).
    pub fn max_payload(&self) -> usize {
        format::max_payload(self.segment_size)
    }

    /// The buffer budget in effect.
    pub fn effective_buffer_budget(&self) -> usize {
        self.buffer_budget
            .unwrap_or(self.max_payload() + format::FRAMING + (1 << 20))
    }

    /// Checks every field.
    pub(crate) fn validate(&self) -> Result<(), Error> {
        if !(MIN_SEGMENT_SIZE..=MAX_SEGMENT_SIZE).contains(&self.segment_size) {
            return Err(Error::InvalidConfig(format!(
                "segment size of {} bytes is outside {MIN_SEGMENT_SIZE}..={MAX_SEGMENT_SIZE}",
                self.segment_size
            )));
        }
        let two = 2 * u64::from(self.segment_size);
        if self.total_size_limit < two {
            return Err(Error::InvalidConfig(format!(
                "total size limit of {} bytes is below two segments ({two} bytes)",
                self.total_size_limit
            )));
        }
        let largest = self.max_payload() + format::FRAMING;
        if self.effective_buffer_budget() < largest {
            return Err(Error::InvalidConfig(format!(
                "buffer budget of {} bytes is below the largest framed entry ({largest} bytes)",
                self.effective_buffer_budget()
            )));
        }
        if self.flush_request_interval.is_zero() {
            return Err(Error::InvalidConfig(
                "flush request interval must be above zero".to_string(),
            ));
        }
        if let SyncMode::Periodic(p) = self.sync
            && p.is_zero()
        {
            return Err(Error::InvalidConfig(
                "periodic sync interval must be above zero (use Batch for a sync per write)"
                    .to_string(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_configs_are_named() {
        let c = Config {
            segment_size: 100,
            ..Config::default()
        };
        assert_eq!(
            c.validate().unwrap_err().to_string(),
            "invalid commit log configuration: segment size of 100 bytes is outside 4096..=2147483648"
        );
        let c = Config {
            total_size_limit: 1,
            ..Config::default()
        };
        assert!(
            c.validate()
                .unwrap_err()
                .to_string()
                .contains("below two segments")
        );
        let c = Config {
            buffer_budget: Some(10),
            ..Config::default()
        };
        assert!(
            c.validate()
                .unwrap_err()
                .to_string()
                .contains("largest framed entry")
        );
        let c = Config {
            sync: SyncMode::Periodic(Duration::ZERO),
            ..Config::default()
        };
        assert!(c.validate().is_err());
        assert!(Config::default().validate().is_ok());
        assert_eq!(Config::default().max_payload(), (16 << 20) - 20);
    }
}
