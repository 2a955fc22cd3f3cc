//! The crate's one error type.

use std::path::PathBuf;

/// Everything that can go wrong choosing, running or recovering a
/// compaction.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An option is out of its accepted range.
    #[error("invalid compaction option {name} = {value}: expected {expected}")]
    InvalidOption {
        /// The option's name.
        name: &'static str,
        /// The value given.
        value: String,
        /// What is accepted.
        expected: &'static str,
    },

    /// Reading an input or writing an output sstable failed.
    #[error("sstable error during compaction")]
    Sstable(#[from] sstable::Error),

    /// The merged fragment stream failed.
    #[error("fragment stream error during compaction")]
    Mutation(#[from] mutation::Error),

    /// An I/O call on a transaction or run file failed.
    #[error("I/O error during {op} on {}", path.display())]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// A compaction transaction file does not decode.
    #[error("corrupt compaction transaction file {} at line {line}: {reason}", path.display())]
    CorruptTransaction {
        /// The file.
        path: PathBuf,
        /// One-based line number.
        line: usize,
        /// What is wrong.
        reason: String,
    },

    /// A run membership file does not decode.
    #[error("corrupt run file {}: {reason}", path.display())]
    CorruptRunFile {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },

    /// A job names an sstable that is not in the table's set (any more).
    #[error("sstable generation {generation} is not in the table's sstable set")]
    NotInSet {
        /// The missing generation.
        generation: u64,
    },

    /// A writer was asked for in a directory that is not one of the set's.
    #[error("{} is not one of the sstable set's directories", dir.display())]
    ForeignDirectory {
        /// The directory.
        dir: PathBuf,
    },

    /// A job was given no inputs, or the set has no data directory.
    #[error("invalid compaction job: {reason}")]
    InvalidJob {
        /// What is wrong.
        reason: String,
    },

    /// The job was stopped (the manager is closing); inputs are intact and
    /// partial outputs removed.
    #[error("compaction stopped before it finished")]
    Stopped,

    /// The manager is closed and takes no more work.
    #[error("the compaction manager is closed")]
    Closed,

    /// A job panicked (a bug); its partial outputs were dropped, its
    /// transaction file is left for `recover`.
    #[error("a compaction job panicked")]
    Panicked,

    /// A worker thread could not be started.
    #[error("could not start compaction worker thread")]
    Spawn(#[source] std::io::Error),

    /// A test hook stopped the job after a step of the replacement, leaving
    /// the files as a crash would (with the `testing` feature).
    #[error("injected crash after compaction step {0}")]
    InjectedCrash(usize),
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

pub(crate) fn io_err<'a>(
    op: &'static str,
    path: &'a std::path::Path,
) -> impl FnOnce(std::io::Error) -> Error + use<'a> {
    move |source| Error::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_thing_and_the_limit() {
        let e = Error::InvalidOption {
            name: "min_threshold",
            value: "1".into(),
            expected: "2 to max_threshold",
        };
        assert_eq!(
            e.to_string(),
            "invalid compaction option min_threshold = 1: expected 2 to max_threshold"
        );
    }
}
