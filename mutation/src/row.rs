//! Rows: a marker, a row tombstone and cells by column id.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use crate::cell::shadowed_by;
use crate::{Cell, Error, RowMarker, Tombstone};

/// Identifies a column of the table's schema.
pub type ColumnId = u32;

/// A static or clustering row: an optional row marker, an optional row
/// tombstone, and cells by column id (sorted).
///
/// Fields are public so that readers and writers can build rows directly;
/// [`Row::apply`] and [`Row::compact`] implement the reconciliation rules.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct Row {
    /// The row marker, if the row was inserted (not just updated).
    pub marker: Option<RowMarker>,
    /// A deletion of the whole row.
    pub tombstone: Option<Tombstone>,
    /// Cells by column id.
    pub cells: BTreeMap<ColumnId, Cell>,
}

impl Row {
    /// An empty row.
    pub fn new() -> Self {
        Self::default()
    }

    /// True if the row holds nothing: no marker, no tombstone, no cells.
    pub fn is_empty(&self) -> bool {
        self.marker.is_none() && self.tombstone.is_none() && self.cells.is_empty()
    }

    /// Builder-style: sets a cell, reconciling with any existing one.
    pub fn with_cell(mut self, column: ColumnId, cell: Cell) -> Self {
        self.apply_cell(column, cell);
        self
    }

    /// Builder-style: sets the marker, reconciling with any existing one.
    pub fn with_marker(mut self, marker: RowMarker) -> Self {
        self.marker = Some(match self.marker {
            Some(m) => m.reconcile(marker),
            None => marker,
        });
        self
    }

    /// Builder-style: sets the row tombstone, keeping the greater one.
    pub fn with_tombstone(mut self, tombstone: Tombstone) -> Self {
        self.tombstone = self.tombstone.max(Some(tombstone));
        self
    }

    /// Reconciles one cell into the row.
    pub fn apply_cell(&mut self, column: ColumnId, cell: Cell) {
        match self.cells.entry(column) {
            Entry::Vacant(v) => {
                v.insert(cell);
            }
            Entry::Occupied(mut o) => {
                if cell.merge_cmp(o.get()) == std::cmp::Ordering::Greater {
                    o.insert(cell);
                }
            }
        }
    }

    /// Reconciles `other` into `self`: the winning marker, the greater row
    /// tombstone, and the winning version of each cell. Does not remove
    /// shadowed data; see [`Row::compact`].
    pub fn apply(&mut self, other: Row) {
        if let Some(m) = other.marker {
            self.marker = Some(match self.marker {
                Some(mine) => mine.reconcile(m),
                None => m,
            });
        }
        self.tombstone = self.tombstone.max(other.tombstone);
        if self.cells.is_empty() {
            self.cells = other.cells;
        } else {
            for (col, cell) in other.cells {
                self.apply_cell(col, cell);
            }
        }
    }

    /// Removes what is shadowed, given the tombstone covering the row from
    /// outside (the greater of the partition tombstone and the range
    /// tombstone over the row's position): the row tombstone if it is not
    /// greater than `covering`; then the marker and every cell (live or
    /// tombstone) whose timestamp is `<=` the greater of `covering` and the
    /// row tombstone.
    pub fn compact(&mut self, covering: Option<Tombstone>) {
        if self.tombstone <= covering {
            self.tombstone = None;
        }
        let effective = covering.max(self.tombstone);
        if effective.is_none() {
            return;
        }
        if self
            .marker
            .is_some_and(|m| shadowed_by(effective, m.timestamp))
        {
            self.marker = None;
        }
        // Checking first is cheaper than `retain` when nothing is shadowed,
        // the common case.
        if self
            .cells
            .values()
            .any(|cell| shadowed_by(effective, cell.timestamp()))
        {
            self.cells
                .retain(|_, cell| !shadowed_by(effective, cell.timestamp()));
        }
    }

    /// Checks every timestamp of the row.
    ///
    /// # Errors
    /// [`Error::TimestampOutOfRange`] naming the offending part.
    pub fn validate(&self) -> Result<(), Error> {
        if let Some(m) = &self.marker {
            m.timestamp.check("row marker")?;
        }
        if let Some(t) = &self.tombstone {
            t.timestamp.check("row tombstone")?;
        }
        for cell in self.cells.values() {
            cell.validate("cell")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Timestamp;

    fn ts(v: i64) -> Timestamp {
        Timestamp::from_micros(v)
    }

    #[test]
    fn compact_drops_shadowed_data_only() {
        let mut row = Row::new()
            .with_marker(RowMarker::new(ts(3)))
            .with_cell(1, Cell::live("old", ts(4)))
            .with_cell(2, Cell::live("new", ts(6)))
            .with_tombstone(Tombstone::new(ts(4), 0));
        row.compact(None);
        assert!(row.marker.is_none());
        assert_eq!(row.cells.len(), 1);
        assert!(row.tombstone.is_some());
        row.compact(Some(Tombstone::new(ts(5), 0)));
        assert!(row.tombstone.is_none());
        assert_eq!(row.cells.keys().copied().collect::<Vec<_>>(), vec![2]);
    }

    #[test]
    fn apply_is_order_independent() {
        let a = Row::new().with_cell(1, Cell::live("a", ts(1)));
        let b = Row::new()
            .with_cell(1, Cell::live("b", ts(1)))
            .with_tombstone(Tombstone::new(ts(0), 3));
        let mut ab = a.clone();
        ab.apply(b.clone());
        let mut ba = b;
        ba.apply(a);
        assert_eq!(ab, ba);
    }

    #[test]
    fn validate_rejects_missing_timestamp() {
        let row = Row::new().with_cell(1, Cell::live("a", Timestamp::from_micros(i64::MIN)));
        assert!(matches!(
            row.validate(),
            Err(Error::TimestampOutOfRange { what: "cell", .. })
        ));
    }
}
