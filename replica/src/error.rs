//! The crate's one error type.

use std::path::PathBuf;

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

/// Maps an `io::Error` of `op` on `path` to [`Error::Io`].
pub(crate) fn io_err(
    op: &'static str,
    path: impl Into<PathBuf>,
) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.into();
    move |source| Error::Io { op, path, source }
}
