//! The crate's one error type.

use std::path::PathBuf;

/// Everything that can go wrong in the load generator. Each message names
/// the thing at fault and, where there is one, the limit it broke; the
/// database's own errors are wrapped ([`Error::Database`]) as they are.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An option (command line or run configuration) with a value outside
    /// what it accepts; the database's own [`replica::Error::InvalidOption`]
    /// (a configuration it refuses, a spelling it parses) becomes this one.
    #[error("invalid {name} {value:?}: expected {expected}")]
    InvalidOption {
        /// The option's name, as the user writes it.
        name: &'static str,
        /// The rejected value, as given.
        value: String,
        /// What would have been accepted.
        expected: String,
    },
    /// A load whose data cannot fit the free space of its data directory:
    /// the run is refused before it starts, rather than fill the disk and
    /// fail every write.
    #[error(
        "the population of {partitions} partitions x {partition_size} B ({needed} B) does not fit \
         in data directory {}: {available} B available, of which {reserve} B must stay free \
         (lower --partitions or --partition-size, or free space)",
        dir.display()
    )]
    NotEnoughDisk {
        /// The data directory with the least space.
        dir: PathBuf,
        /// Partitions of the population.
        partitions: u64,
        /// Bytes of values per partition.
        partition_size: u64,
        /// Bytes the population needs.
        needed: u64,
        /// Bytes available to the process in `dir`'s file system.
        available: u64,
        /// Bytes kept free (flushes, compaction, the commit log).
        reserve: u64,
    },
    /// Writing a report (progress, summary, JSON or HdrHistogram log)
    /// failed, or a run could not be carried out to its report.
    #[error("cannot write the {what}: {detail}")]
    Report {
        /// Which report.
        what: &'static str,
        /// The underlying failure.
        detail: String,
    },
    /// An I/O operation on a run's files or directories failed.
    #[error("cannot {op} {}", path.display())]
    Io {
        /// What was being done ("create", "write", ...).
        op: &'static str,
        /// The file or directory it was done to.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A signal (SIGINT, SIGTERM) stopped the program before anything was
    /// measured: during the populate phase, or before a run opened.
    #[error("interrupted during the {during}: nothing was measured")]
    Interrupted {
        /// What was going on.
        during: &'static str,
    },
    /// The mutation layer refused a generated key or row (one that breaks
    /// its limits).
    #[error(transparent)]
    Mutation(#[from] mutation::Error),
    /// The database failed (opening it, creating the load's tables,
    /// closing it); its message is the database's own.
    #[error(transparent)]
    Database(replica::Error),
}

impl From<replica::Error> for Error {
    /// The database's error, wrapped; its
    /// [`InvalidOption`](replica::Error::InvalidOption) becomes
    /// [`Error::InvalidOption`], so an option the database refuses reads
    /// (and matches) like one the load generator refuses.
    fn from(e: replica::Error) -> Self {
        match e {
            replica::Error::InvalidOption {
                name,
                value,
                expected,
            } => Error::InvalidOption {
                name,
                value,
                expected,
            },
            e => Error::Database(e),
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Maps an `io::Error` of `op` on `path` to [`Error::Io`].
pub(crate) fn io_err(
    op: &'static str,
    path: impl Into<PathBuf>,
) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.into();
    move |source| Error::Io { op, path, source }
}
