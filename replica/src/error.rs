//! The crate's one error type.

use std::path::{Path, PathBuf};

/// Everything that can go wrong in this crate. Each message names the thing
/// at fault and, where there is one, the limit it broke.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An option (command line or configuration) with a value outside what
    /// it accepts.
    #[error("invalid {name} {value:?}: expected {expected}")]
    InvalidOption {
        /// The option's name, as the user writes it.
        name: &'static str,
        /// The rejected value, as given.
        value: String,
        /// What would have been accepted.
        expected: String,
    },
    /// A table name that is empty, too long, or uses characters a file name
    /// cannot safely hold.
    #[error("invalid table name {name:?}: {reason}")]
    InvalidTableName {
        /// The rejected name.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// `create_table` of a name that already exists.
    #[error("table {name:?} already exists")]
    TableExists {
        /// The table's name.
        name: String,
    },
    /// A table name that is not in the catalog.
    #[error("no table named {name:?}")]
    UnknownTable {
        /// The name asked for.
        name: String,
    },
    /// The catalog already holds its maximum number of tables.
    #[error(
        "cannot create table {name:?}: the catalog already holds the maximum of {limit} tables"
    )]
    TooManyTables {
        /// The table that was not created.
        name: String,
        /// The limit.
        limit: usize,
    },
    /// A directory is held by another open database, in this process or
    /// another one.
    #[error(
        "directory {} is in use by another open database (lock file {} is held{})",
        dir.display(),
        lock_file.display(),
        holder.as_ref().map(|p| format!(" by process {p}")).unwrap_or_default()
    )]
    DirectoryLocked {
        /// The directory.
        dir: PathBuf,
        /// Its lock file.
        lock_file: PathBuf,
        /// The holder's process id, as its lock file records it.
        holder: Option<String>,
    },
    /// The catalog file is missing. A missing catalog is never taken for
    /// an empty database: if the directories hold table data, the catalog
    /// was lost, and rebuilding it is an explicit step
    /// ([`Database::rebuild_catalog`](crate::Database::rebuild_catalog)).
    #[error(
        "the catalog {} is missing{}; restore it, or rebuild it from the table directories \
         with Database::rebuild_catalog",
        path.display(),
        found.as_ref().map(|f| format!(" but {} holds table data", f.display())).unwrap_or_default()
    )]
    CatalogMissing {
        /// The catalog file.
        path: PathBuf,
        /// Table data found without it (a table directory or the commit
        /// log), if any was looked for and found.
        found: Option<PathBuf>,
    },
    /// A catalog was to be created (or rebuilt) where one exists.
    #[error("the catalog {} already exists; it is left as it is", path.display())]
    CatalogExists {
        /// The catalog file.
        path: PathBuf,
    },
    /// A table's directory exists but was not created by this database
    /// (it has no table marker, or one of another table): it is left
    /// alone, and the table is not created over it.
    #[error(
        "cannot use {} for table {table:?}: {reason}; move it away first",
        dir.display()
    )]
    ForeignTableDirectory {
        /// The table.
        table: String,
        /// The directory.
        dir: PathBuf,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A file whose contents are not what this crate wrote.
    #[error("{} is corrupt: {detail}", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the offset or field where it applies.
        detail: String,
    },
    /// An I/O operation failed.
    #[error("cannot {op} {}", path.display())]
    Io {
        /// What was being done ("create", "read", "rename", ...).
        op: &'static str,
        /// The file or directory it was done to.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The sstable layer failed on a table's directory.
    #[error("sstables of table {table:?} in {}", dir.display())]
    Sstable {
        /// The table.
        table: String,
        /// The directory.
        dir: PathBuf,
        /// The sstable crate's error.
        #[source]
        source: sstable::Error,
    },
    /// The mutation layer refused a value (for example a generated key or
    /// row that breaks its limits).
    #[error(transparent)]
    Mutation(#[from] mutation::Error),
    /// The database was closed: it takes no more operations.
    #[error("the database is closed: {operation} refused")]
    Closed {
        /// The refused operation.
        operation: &'static str,
    },
    /// A mutation the database refuses as it is: one that holds nothing to
    /// write, for example.
    #[error("invalid mutation of partition {key} for table {table:?}: {reason}")]
    InvalidMutation {
        /// The table written to.
        table: String,
        /// The partition, rendered.
        key: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A mutation, or one of its cell values, larger than every layer
    /// accepts (`mutation::limits`; a merge of mutations can grow past what
    /// the builder allows).
    #[error(
        "mutation of partition {key} for table {table:?} is too large: {what} of {size} bytes \
         exceeds the limit of {limit} bytes"
    )]
    MutationTooLarge {
        /// The table written to.
        table: String,
        /// The partition, rendered.
        key: String,
        /// What is too large ("mutation" or "cell value").
        what: &'static str,
        /// Its size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// A write waited for dirty memory longer than the write timeout:
    /// flushes did not free memory fast enough.
    #[error(
        "write to table {table:?} not admitted within {timeout:?}: dirty memory stayed at its \
         hard limit"
    )]
    WriteTimeout {
        /// The table written to.
        table: String,
        /// The timeout.
        timeout: std::time::Duration,
        /// The dirty-memory manager's error.
        #[source]
        source: dirty_memory::Error,
    },
    /// A memtable refused a write or a read.
    #[error("memtable of table {table:?}")]
    Memtable {
        /// The table.
        table: String,
        /// The memtable crate's error.
        #[source]
        source: memtable::Error,
    },
    /// An explicit flush of a table failed (the dirty-memory manager keeps
    /// the memtable and, for transient failures, retries it).
    #[error("flush of table {table:?} failed")]
    Flush {
        /// The table.
        table: String,
        /// The dirty-memory manager's error.
        #[source]
        source: dirty_memory::Error,
    },
    /// The commit log failed (opening or replaying it, or logging a
    /// write, which is then not applied).
    #[error("commit log")]
    CommitLog {
        /// The commitlog crate's error.
        #[source]
        source: commitlog::Error,
    },
    /// A compaction of a table failed or was stopped, or a table
    /// directory's compaction files are damaged.
    #[error("compaction of table {table:?}")]
    Compaction {
        /// The table (and directory, for a job's failure).
        table: String,
        /// The compaction crate's error.
        #[source]
        source: compaction::Error,
    },
    /// The disk is full: a commit-log write, a flush or a compaction failed
    /// with `ENOSPC` ([`std::io::ErrorKind::StorageFull`]). Every write
    /// acknowledged before it is durable; the log accepts no more writes
    /// (today only a reopen brings it back), a failed flush keeps its
    /// memtable and is retried, a failed compaction keeps its inputs.
    #[error(
        "{what}: directory {} is full (no space left on device)",
        dir.display()
    )]
    DiskFull {
        /// What hit the full disk: the commit log, a table's flush or
        /// compaction.
        what: String,
        /// The directory that is full (the commit log's, or the data
        /// directory the flush or compaction wrote to).
        dir: PathBuf,
        /// The error of the component that hit it, with the I/O error at
        /// the end of its chain.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// A background component (dirty-memory manager, flush scheduler,
    /// memory pool) could not be started.
    #[error("cannot start the {what}: {detail}")]
    Start {
        /// The component.
        what: &'static str,
        /// Why.
        detail: String,
    },
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Whether this is [`Error::DiskFull`].
    #[must_use]
    pub fn is_disk_full(&self) -> bool {
        matches!(self, Error::DiskFull { .. })
    }

    /// A commit-log error: [`Error::DiskFull`] naming the log's directory
    /// when the disk was full, [`Error::CommitLog`] otherwise.
    pub(crate) fn commit_log(source: commitlog::Error) -> Self {
        match full_disk_dir(&source) {
            Some(Some(dir)) => Error::DiskFull {
                what: "commit log".to_owned(),
                dir,
                source: Box::new(source),
            },
            _ => Error::CommitLog { source },
        }
    }

    /// A failed flush of `table`: [`Error::DiskFull`] when the disk was
    /// full, naming the directory of the file that hit it (or `data_dir`
    /// when the chain names none), [`Error::Flush`] otherwise.
    pub(crate) fn flush(table: &str, data_dir: &Path, source: dirty_memory::Error) -> Self {
        match full_disk_dir(&source) {
            Some(dir) => Error::DiskFull {
                what: format!("flush of table {table:?}"),
                dir: dir.unwrap_or_else(|| data_dir.to_path_buf()),
                source: Box::new(source),
            },
            None => Error::Flush {
                table: table.to_owned(),
                source,
            },
        }
    }

    /// A failed compaction of `table` in `set_dir`: [`Error::DiskFull`]
    /// when the disk was full, naming the directory of the file that hit
    /// it (or `set_dir`), [`Error::Compaction`] otherwise.
    pub(crate) fn compaction(table: &str, set_dir: &Path, source: compaction::Error) -> Self {
        match full_disk_dir(&source) {
            Some(dir) => Error::DiskFull {
                what: format!("compaction of table {table:?}"),
                dir: dir.unwrap_or_else(|| set_dir.to_path_buf()),
                source: Box::new(source),
            },
            None => Error::Compaction {
                table: table.to_owned(),
                source,
            },
        }
    }
}

/// Walks `err` and its sources: `None` if no `ENOSPC` is among them, else
/// `Some` of the directory named nearest above it (the log's directory, or
/// the parent of the sstable or compaction file whose call failed), if any.
pub(crate) fn full_disk_dir(err: &(dyn std::error::Error + 'static)) -> Option<Option<PathBuf>> {
    let mut dir: Option<PathBuf> = None;
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cur {
        let named = if let Some(e) = e.downcast_ref::<commitlog::Error>() {
            match e {
                commitlog::Error::DiskFull { dir, .. } => return Some(Some(dir.clone())),
                commitlog::Error::Io { path, .. } => path.parent().map(Path::to_path_buf),
                _ => None,
            }
        } else if let Some(sstable::Error::Io { path, .. }) = e.downcast_ref::<sstable::Error>() {
            path.parent().map(Path::to_path_buf)
        } else if let Some(compaction::Error::Io { path, .. }) =
            e.downcast_ref::<compaction::Error>()
        {
            path.parent().map(Path::to_path_buf)
        } else {
            None
        };
        if named.is_some() {
            dir = named;
        }
        let io = e.downcast_ref::<std::io::Error>().or_else(|| {
            e.downcast_ref::<crate::sync::Arc<std::io::Error>>()
                .map(|a| &**a)
        });
        if io.is_some_and(|io| io.kind() == std::io::ErrorKind::StorageFull) {
            return Some(dir);
        }
        cur = e.source();
    }
    None
}

/// Maps an `io::Error` of `op` on `path` to [`Error::Io`].
pub(crate) fn io_err(
    op: &'static str,
    path: impl Into<PathBuf>,
) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.into();
    move |source| Error::Io { op, path, source }
}
