//! The crate's error type.

use std::fmt;
use std::path::PathBuf;

/// One component of an sstable on disk.
///
/// Every sstable consists of exactly these components; the TOC lists them
/// and is written last, so its presence marks a committed sstable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Component {
    /// Partitions as fragment streams, in crc32c-checked blocks.
    Data,
    /// Partition key to data position, with clustering-block indexes.
    Index,
    /// One sampled index entry per index block, held in memory.
    Summary,
    /// Bloom filter over partition keys.
    Filter,
    /// Counts, timestamps, key range and sizes.
    Statistics,
    /// crc32c of the whole Data component, as decimal text.
    Digest,
    /// Table of contents: the list of components; written last.
    Toc,
}

impl Component {
    /// Every component, in the order the TOC lists them.
    pub const ALL: [Component; 7] = [
        Component::Data,
        Component::Index,
        Component::Summary,
        Component::Filter,
        Component::Statistics,
        Component::Digest,
        Component::Toc,
    ];

    /// The file name suffix of this component (`Data.db`, `TOC.txt`, ...).
    pub fn file_suffix(self) -> &'static str {
        match self {
            Component::Data => "Data.db",
            Component::Index => "Index.db",
            Component::Summary => "Summary.db",
            Component::Filter => "Filter.db",
            Component::Statistics => "Statistics.db",
            Component::Digest => "Digest.crc32",
            Component::Toc => "TOC.txt",
        }
    }

    /// The component whose file suffix is `suffix`, if any.
    pub fn from_file_suffix(suffix: &str) -> Option<Component> {
        Component::ALL
            .into_iter()
            .find(|c| c.file_suffix() == suffix)
    }
}

impl fmt::Display for Component {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Component::Data => "Data",
            Component::Index => "Index",
            Component::Summary => "Summary",
            Component::Filter => "Filter",
            Component::Statistics => "Statistics",
            Component::Digest => "Digest",
            Component::Toc => "TOC",
        };
        f.write_str(name)
    }
}

/// Everything that can go wrong writing, reading or verifying an sstable.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O call failed on `path`.
    #[error("I/O error during {op} on {}", path.display())]
    Io {
        /// What was being done ("open", "write", "fsync", "rename", ...).
        op: &'static str,
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// A component's bytes do not decode to a valid sstable: bad checksum,
    /// bad magic, truncation, out-of-order keys, disagreeing components, ...
    #[error("corrupt {component} component {} at offset {offset}: {reason}", file.display())]
    Corrupt {
        /// The component's file.
        file: PathBuf,
        /// Which component.
        component: Component,
        /// Byte offset in the file where the problem was found.
        offset: u64,
        /// What is wrong.
        reason: String,
    },

    /// A component the TOC requires is missing from the directory.
    #[error("sstable generation {generation} in {} has no {component} component", dir.display())]
    MissingComponent {
        /// The sstable directory.
        dir: PathBuf,
        /// The sstable's generation.
        generation: u64,
        /// The missing component.
        component: Component,
    },

    /// The fragment stream handed to the writer breaks an ordering rule;
    /// nothing has been committed.
    #[error("invalid fragment stream at fragment {fragment_index}: {reason}")]
    InvalidStream {
        /// Zero-based position of the offending fragment in the stream.
        fragment_index: u64,
        /// Which rule was broken.
        reason: String,
    },

    /// The fragment source the writer reads from reported an error.
    #[error("fragment source failed")]
    Source(#[source] mutation::Error),

    /// A value exceeds a limit of the format.
    #[error("{what} of {size} bytes exceeds the {limit}-byte limit")]
    TooLarge {
        /// What was too large.
        what: &'static str,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },

    /// A writer or reader option is out of range.
    #[error("invalid option {name} = {value}: {expected}")]
    InvalidOption {
        /// The option's name.
        name: &'static str,
        /// The value given.
        value: String,
        /// What is accepted.
        expected: &'static str,
    },

    /// No sstable with this generation is committed in the directory.
    #[error("no committed sstable with generation {generation} in {}", dir.display())]
    NotFound {
        /// The directory searched.
        dir: PathBuf,
        /// The generation asked for.
        generation: u64,
    },

    /// A file name does not follow the `sst-<generation>-<Component>` pattern.
    #[error("{} is not an sstable component file name (expected sst-<generation>-<Component>)", path.display())]
    BadFileName {
        /// The offending path.
        path: PathBuf,
    },

    /// The writer stopped at a fault-injection point
    /// (`WriterOptions::crash_after`, with the `testing` feature), leaving
    /// the files as a crash at that point would.
    #[error("injected crash after commit step {0:?}")]
    InjectedCrash(crate::CommitStep),
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Attaches the operation and path to an I/O error.
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
    use std::error::Error as _;

    #[test]
    fn causes_are_sources_and_are_not_repeated_in_the_message() {
        let err = io_err("fsync", std::path::Path::new("/d/sst-1-Data.db"))(std::io::Error::other(
            "disk on fire",
        ));
        assert_eq!(
            err.to_string(),
            "I/O error during fsync on /d/sst-1-Data.db"
        );
        assert_eq!(err.source().expect("a source").to_string(), "disk on fire");

        let err = Error::Source(mutation::Error::EmptyPartitionKey);
        assert_eq!(err.to_string(), "fragment source failed");
        assert!(err.source().is_some());
    }
}
