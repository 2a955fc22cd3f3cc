//! The open tables, by name and by commit-log id, in one index under one
//! lock: the database's operations find a table by its name, the commit
//! log's flush requests by its id, and both see a table come and go at
//! the same moment.

use std::collections::{BTreeMap, HashMap};

use commitlog::TableId;

use crate::database::table::Table;
use crate::sync::{Arc, RwLock};

#[derive(Debug, Default)]
struct Maps {
    by_name: BTreeMap<String, Arc<Table>>,
    by_id: HashMap<TableId, Arc<Table>>,
}

/// The open tables (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct TableIndex {
    maps: RwLock<Maps>,
}

impl TableIndex {
    /// Adds `table` under its name and its log id.
    pub(crate) fn insert(&self, table: Arc<Table>) {
        let mut maps = self.maps.write();
        maps.by_id.insert(table.id, Arc::clone(&table));
        maps.by_name.insert(table.name().to_owned(), table);
    }

    /// Removes the table `name`, and returns it.
    pub(crate) fn remove(&self, name: &str) -> Option<Arc<Table>> {
        let mut maps = self.maps.write();
        let table = maps.by_name.remove(name)?;
        maps.by_id.remove(&table.id);
        Some(table)
    }

    /// The table `name`.
    pub(crate) fn get(&self, name: &str) -> Option<Arc<Table>> {
        self.maps.read().by_name.get(name).cloned()
    }

    /// The table whose commit-log id is `id`.
    pub(crate) fn by_id(&self, id: TableId) -> Option<Arc<Table>> {
        self.maps.read().by_id.get(&id).cloned()
    }

    /// Every open table, by name.
    pub(crate) fn all(&self) -> Vec<Arc<Table>> {
        self.maps.read().by_name.values().cloned().collect()
    }

    /// How many tables are open.
    pub(crate) fn len(&self) -> usize {
        self.maps.read().by_name.len()
    }
}
