//! The reader of one input run: its fragments (disjoint key ranges, in key
//! order) one after the other, each opened when the previous one is
//! exhausted and dropped then.
//!
//! An incremental job releases an input fragment once its data is in
//! committed outputs, and the set deletes its files once nothing holds it.
//! A reader of the fragment holds it too (an open sstable keeps its Data
//! and Index files open, and an unlinked file that is still open keeps its
//! blocks on disk), so a job that kept one reader per input fragment to
//! the end would free no disk space before it ended. Reading a run through
//! one `RunReader` keeps at most one fragment per input run open.

use std::collections::VecDeque;

use mutation::{Fragment, FragmentReader, PartitionRange};
use sstable::{Sstable, SstableReader};

/// The fragments of one run, read in key order.
pub(crate) struct RunReader {
    /// Fragments not opened yet, in key order.
    pending: VecDeque<Sstable>,
    current: Option<SstableReader>,
    /// The range of the last fast-forward, for the fragments opened later.
    range: Option<PartitionRange>,
}

impl RunReader {
    /// Reads `fragments`, which must hold disjoint key ranges in key order.
    pub(crate) fn new(fragments: Vec<Sstable>) -> Self {
        RunReader {
            pending: fragments.into(),
            current: None,
            range: None,
        }
    }

    /// Opens the next fragment; false when none is left.
    fn open_next(&mut self) -> Result<bool, mutation::Error> {
        let Some(table) = self.pending.pop_front() else {
            return Ok(false);
        };
        let mut reader = table.scan();
        // The reader holds its own clone; ours goes now.
        drop(table);
        if let Some(range) = &self.range {
            reader.fast_forward_to(range.clone())?;
        }
        self.current = Some(reader);
        Ok(true)
    }
}

impl FragmentReader for RunReader {
    fn next(&mut self) -> Result<Option<Fragment>, mutation::Error> {
        loop {
            if let Some(reader) = self.current.as_mut() {
                if let Some(f) = reader.next()? {
                    return Ok(Some(f));
                }
                // Exhausted: let go of the fragment at once.
                self.current = None;
            }
            if !self.open_next()? {
                return Ok(None);
            }
        }
    }

    fn fast_forward_to(&mut self, range: PartitionRange) -> Result<(), mutation::Error> {
        if let Some(reader) = self.current.as_mut() {
            reader.fast_forward_to(range.clone())?;
        }
        self.range = Some(range);
        Ok(())
    }

    fn next_partition(&mut self) -> Result<(), mutation::Error> {
        match self.current.as_mut() {
            Some(reader) => reader.next_partition(),
            None => Ok(()),
        }
    }
}
