//! [`TableHandle`]: one table of an open database, reached without a
//! lookup by name per operation (fjall's partition handle).

use std::fmt;

use mutation::{ClusteringRange, DecoratedKey, Mutation, PartitionRange};

use crate::database::Database;
use crate::database::read::TableReader;
use crate::database::table::Table;
use crate::error::Error;
use crate::sync::{Arc, Ordering};

/// One table of an open [`Database`], from [`Database::table`]: the same
/// writes, reads and flushes as the database's methods that take a table
/// name, without looking the name up each time (the by-name methods take
/// the database's table map for every operation; a handle took it once).
///
/// A handle borrows the database, so it cannot outlive it. Operations
/// still pass the database's gate: after [`close`](Database::close) they
/// fail with [`Error::Closed`]. Once the table is dropped
/// ([`Database::drop_table`]) they fail with [`Error::UnknownTable`], as
/// the by-name methods do; a table created again under the same name is a
/// new incarnation, which this handle does not reach.
///
/// ```
/// use mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, Timestamp};
/// use replica::{Database, DatabaseConfig, TableSchema};
///
/// let dir = tempfile::tempdir()?;
/// let db = Database::open(DatabaseConfig::new(dir.path()))?;
/// db.create_table(TableSchema::new("users")?)?;
/// let users = db.table("users")?;
///
/// let key = DecoratedKey::from_bytes("user:1")?;
/// let write = Mutation::builder(key.clone())
///     .cell("profile", 0, Cell::live("alice", Timestamp::from_micros(1)))
///     .build()?;
/// users.apply(&write)?;
/// assert_eq!(users.get(&key, ClusteringRange::full())?, Some(write));
/// users.flush()?;
///
/// db.drop_table("users")?;
/// assert!(matches!(users.apply(&Mutation::builder(key).build()?), Err(replica::Error::UnknownTable { .. })));
/// db.close()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TableHandle<'db> {
    db: &'db Database,
    table: Arc<Table>,
}

impl fmt::Debug for TableHandle<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TableHandle")
            .field("table", &self.table.name())
            .finish_non_exhaustive()
    }
}

impl<'db> TableHandle<'db> {
    pub(crate) fn new(db: &'db Database, table: Arc<Table>) -> Self {
        TableHandle { db, table }
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        self.table.name()
    }

    /// The table, unless it was dropped since the handle was made.
    fn open(&self) -> Result<&Table, Error> {
        if self.table.dropped.load(Ordering::Acquire) {
            return Err(Error::UnknownTable {
                name: self.table.name().to_owned(),
            });
        }
        Ok(&self.table)
    }

    /// [`Database::apply`] to this table.
    ///
    /// # Errors
    /// Those of [`Database::apply`]; [`Error::UnknownTable`] once the
    /// table was dropped.
    pub fn apply(&self, mutation: &Mutation) -> Result<(), Error> {
        let _pass = self.db.enter("apply")?;
        self.db.write(self.open()?, mutation)
    }

    /// [`Database::apply_async`] to this table (its cancellation rules
    /// too).
    ///
    /// # Errors
    /// Those of [`Database::apply_async`]; [`Error::UnknownTable`] once the
    /// table was dropped.
    pub async fn apply_async(&self, mutation: Mutation) -> Result<(), Error> {
        let _pass = self.db.enter("apply")?;
        self.db.write_async(self.open()?, mutation).await
    }

    /// [`Database::get`] of this table.
    ///
    /// # Errors
    /// Those of [`Database::get`]; [`Error::UnknownTable`] once the table
    /// was dropped.
    pub fn get(
        &self,
        key: &DecoratedKey,
        slice: ClusteringRange,
    ) -> Result<Option<Mutation>, Error> {
        let _pass = self.db.enter("get")?;
        super::read_partition(self.open()?, key, slice)
    }

    /// [`Database::scan`] of this table.
    ///
    /// # Errors
    /// Those of [`Database::scan`]; [`Error::UnknownTable`] once the table
    /// was dropped.
    pub fn scan(&self, range: PartitionRange) -> Result<TableReader, Error> {
        let _pass = self.db.enter("scan")?;
        self.open()?.make_reader(range, ClusteringRange::full())
    }

    /// [`Database::flush`] of this table.
    ///
    /// # Errors
    /// Those of [`Database::flush`]; [`Error::UnknownTable`] once the table
    /// was dropped.
    pub fn flush(&self) -> Result<(), Error> {
        let _pass = self.db.enter("flush")?;
        self.open()?;
        self.db.flush_tables(std::slice::from_ref(&self.table))
    }
}
