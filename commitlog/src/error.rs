//! The crate's one error type.

use std::path::PathBuf;
use std::time::Duration;

use crate::TableId;
use crate::sync::PlainArc;

/// Everything that can go wrong in the commit log.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An entry larger than the largest the log frames (half a segment less
    /// the framing), refused before any byte is written.
    #[error(
        "commit log entry of {size} bytes for table {table} exceeds the {limit}-byte limit (half the {segment_size}-byte segment less {framing} bytes of framing)"
    )]
    EntryTooLarge {
        /// The table the entry was for.
        table: TableId,
        /// Payload size: table id, kind and encoded mutation.
        size: usize,
        /// The largest payload accepted.
        limit: usize,
        /// The configured segment size.
        segment_size: u32,
        /// Bytes of framing per entry.
        framing: usize,
    },
    /// [`CommitLog::add_batch`](crate::CommitLog::add_batch) stopped
    /// part-way: its first `appended` entries are in the log, the rest are
    /// not.
    #[error("commit log batch stopped after {appended} of {total} entries")]
    BatchIncomplete {
        /// Entries appended, the first ones of the batch.
        appended: usize,
        /// Entries in the batch.
        total: usize,
        /// Why appending stopped.
        #[source]
        source: Box<Error>,
    },
    /// A configuration value outside its allowed range.
    #[error("invalid commit log configuration: {0}")]
    InvalidConfig(String),
    /// The log reached its total size limit and no segment was freed within
    /// the writer's timeout.
    #[error(
        "commit log is full: {disk_bytes} bytes on disk reach the {limit}-byte limit and no segment was freed within {timeout:?} (flushes of the tables holding the oldest segment were requested)"
    )]
    LogFull {
        /// Bytes of segments on disk.
        disk_bytes: u64,
        /// The configured total size limit.
        limit: u64,
        /// How long the writer waited.
        timeout: Duration,
    },
    /// The unwritten buffers stayed at their byte budget for the writer's
    /// whole timeout (the disk is slower than the writers).
    #[error(
        "commit log write buffers stayed at their {budget}-byte budget for {timeout:?}: the disk is not keeping up"
    )]
    BufferTimeout {
        /// The configured byte budget.
        budget: usize,
        /// How long the writer waited.
        timeout: Duration,
    },
    /// A write or sync failed earlier; the log refuses further appends
    /// because it cannot know what reached the disk (a failed fdatasync
    /// cannot be retried safely).
    #[error("commit log failed earlier and accepts no more writes")]
    Failed(#[source] PlainArc<std::io::Error>),
    /// The disk holding the log is full (a write, sync or segment creation
    /// failed with `ENOSPC`, [`std::io::ErrorKind::StorageFull`]). Like
    /// [`Error::Failed`], the log accepts no more writes after it; every
    /// entry acknowledged before it is durable.
    #[error(
        "commit log directory {} is full (no space left on device); the log accepts no more writes",
        dir.display()
    )]
    DiskFull {
        /// The log's directory.
        dir: PathBuf,
        /// The error of the call that hit the full disk.
        #[source]
        source: PlainArc<std::io::Error>,
    },
    /// The log was closed.
    #[error("commit log is closed")]
    Closed,
    /// An I/O error on a path.
    #[error("commit log I/O error on {path}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Replay met damage in a segment and [`crate::CorruptionPolicy::Stop`]
    /// is in effect: nothing was replayed and nothing on disk changed.
    #[error(
        "commit log segment {path} is damaged at offset {offset}: {reason}; replay stopped and nothing was changed (copy the files away, then open with CorruptionPolicy::Skip to skip the damaged entries)"
    )]
    Corrupt {
        /// The segment file (or the drop side file).
        path: PathBuf,
        /// The segment id (0 for the drop side file).
        segment: u64,
        /// Offset of the first byte that could not be read.
        offset: u32,
        /// What was wrong.
        reason: String,
    },
    /// A segment written by another format version (replay refuses rather
    /// than misread it).
    #[error(
        "commit log segment {path} has format version {version}; this build reads version {supported}"
    )]
    UnsupportedVersion {
        /// The segment file.
        path: PathBuf,
        /// The version in its header.
        version: u32,
        /// The version this build reads and writes.
        supported: u32,
    },
}

impl Error {
    /// The error a writer gets for the log's failure `e` in `dir`:
    /// [`Error::DiskFull`] when the disk was full, [`Error::Failed`]
    /// otherwise.
    pub(crate) fn failure(dir: PathBuf, e: &PlainArc<std::io::Error>) -> Self {
        if e.kind() == std::io::ErrorKind::StorageFull {
            Error::DiskFull {
                dir,
                source: PlainArc::clone(e),
            }
        } else {
            Error::Failed(PlainArc::clone(e))
        }
    }

    /// Whether this error, or the one that stopped a batch part-way, is
    /// [`Error::DiskFull`].
    #[must_use]
    pub fn is_disk_full(&self) -> bool {
        match self {
            Error::DiskFull { .. } => true,
            Error::BatchIncomplete { source, .. } => source.is_disk_full(),
            _ => false,
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}
