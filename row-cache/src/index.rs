//! The cache's index: entries in ring order, the LRU list, the continuity
//! set and the population phase. It lives on the heap behind one mutex
//! (bounded: one small entry per cached partition); the partitions' bytes
//! live in the region.
//!
//! **The index lock is a leaf.** Nothing else is locked while it is held:
//! no region access, no other lock. That is what lets the eviction callback,
//! which runs with the region locked, take it and wait for it.

use std::collections::BTreeMap;
use std::ops::Bound;

use logalloc::Handle;
use mutation::{ClusteringRange, DecoratedKey, Position};
use slab::Slab;

use crate::point::{AT, Continuity, Point, Probe, RingKey};
use crate::stored::{self, Pieces};

/// One cached partition.
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) key: DecoratedKey,
    pub(crate) pieces: Pieces,
    /// Encoded length (what the budget counts).
    pub(crate) len: usize,
    /// The clustering range whose rows the entry holds completely.
    pub(crate) covered: ClusteringRange,
    /// Changes whenever `pieces` or `covered` change.
    pub(crate) version: u64,
    newer: Option<usize>,
    older: Option<usize>,
}

/// What an entry was when it was looked at.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    pub(crate) key: DecoratedKey,
    pub(crate) pieces: Pieces,
    pub(crate) covered: ClusteringRange,
    pub(crate) version: u64,
}

/// The index; see the module documentation.
#[derive(Debug, Default)]
pub(crate) struct Index {
    entries: Slab<Entry>,
    by_key: BTreeMap<Point, usize>,
    pub(crate) continuity: Continuity,
    newest: Option<usize>,
    oldest: Option<usize>,
    /// Advanced by every update at flush; a population carries the phase it
    /// read the source in and is refused if it changed.
    pub(crate) phase: u64,
    next_version: u64,
    /// Sum of the entries' encoded lengths.
    pub(crate) stored_bytes: usize,
}

impl Index {
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The entry of `key`.
    pub(crate) fn find(&self, key: &DecoratedKey) -> Option<usize> {
        self.by_key
            .get::<dyn RingKey>(Probe::key(key, AT).as_dyn())
            .copied()
    }

    /// The first entry whose key lies in `[start, end]`.
    pub(crate) fn first_in(&self, start: Probe<'_>, end: Probe<'_>) -> Option<usize> {
        if start.as_dyn() > end.as_dyn() {
            return None;
        }
        self.by_key
            .range::<dyn RingKey, _>((
                Bound::Included(start.as_dyn()),
                Bound::Included(end.as_dyn()),
            ))
            .next()
            .map(|(_, &i)| i)
    }

    pub(crate) fn entry(&self, i: usize) -> &Entry {
        &self.entries[i]
    }

    pub(crate) fn snapshot(&self, i: usize) -> Snapshot {
        let e = &self.entries[i];
        Snapshot {
            key: e.key.clone(),
            pieces: Pieces::clone(&e.pieces),
            covered: e.covered.clone(),
            version: e.version,
        }
    }

    /// Marks entry `i` most recently used.
    pub(crate) fn touch(&mut self, i: usize) {
        if self.newest == Some(i) {
            return;
        }
        self.unlink_lru(i);
        self.push_newest(i);
    }

    /// Adds an entry (the key must be absent) as the most recently used.
    pub(crate) fn insert(&mut self, key: DecoratedKey, pieces: Pieces, covered: ClusteringRange) {
        self.next_version += 1;
        let len = stored::total_len(&pieces);
        let i = self.entries.insert(Entry {
            key: key.clone(),
            pieces,
            len,
            covered,
            version: self.next_version,
            newer: None,
            older: None,
        });
        self.by_key.insert(Point::Key(key, AT), i);
        self.stored_bytes += len;
        self.push_newest(i);
    }

    /// Replaces entry `i`'s pieces; returns the old objects (to free).
    pub(crate) fn replace(
        &mut self,
        i: usize,
        pieces: Pieces,
        covered: ClusteringRange,
    ) -> Vec<Handle> {
        self.next_version += 1;
        let len = stored::total_len(&pieces);
        let e = &mut self.entries[i];
        self.stored_bytes = self.stored_bytes - e.len + len;
        e.len = len;
        e.covered = covered;
        e.version = self.next_version;
        let old = std::mem::replace(&mut e.pieces, pieces);
        self.touch(i);
        stored::handles(&old)
    }

    /// Removes entry `i` (continuity untouched); returns it.
    pub(crate) fn remove(&mut self, i: usize) -> Entry {
        self.unlink_lru(i);
        let e = self.entries.remove(i);
        self.by_key
            .remove::<dyn RingKey>(Probe::key(&e.key, AT).as_dyn());
        self.stored_bytes -= e.len;
        e
    }

    /// Evicts from the least recently used entry: its last piece if it has
    /// several (the entry then covers only the rows before that piece, and
    /// stays the least recently used), else the whole entry, making its
    /// neighbourhood discontinuous. Returns the objects to free, or `None`
    /// if the cache is empty.
    pub(crate) fn evict_oldest(&mut self) -> Option<Vec<Handle>> {
        let i = self.oldest?;
        if let Some(freed) = self.evict_tail(i) {
            return Some(freed);
        }
        let e = self.remove(i);
        self.continuity.remove_key(&e.key);
        Some(stored::handles(&e.pieces))
    }

    /// Drops entry `i`'s last piece if it has more than one.
    fn evict_tail(&mut self, i: usize) -> Option<Vec<Handle>> {
        let e = &mut self.entries[i];
        let (last, rest) = e.pieces.split_last()?;
        let first = last.first.clone()?;
        let covered =
            ClusteringRange::from_positions(&e.covered.start_position(), &Position::Before(first))
                .ok()?;
        let freed = last.data.handles().to_vec();
        e.len -= last.len;
        self.stored_bytes -= last.len;
        e.pieces = rest.to_vec().into();
        e.covered = covered;
        self.next_version += 1;
        e.version = self.next_version;
        Some(freed)
    }

    /// Removes the entry of `key` if any and makes its neighbourhood
    /// discontinuous. Returns the objects to free.
    pub(crate) fn invalidate_key(&mut self, key: &DecoratedKey) -> Vec<Handle> {
        let freed = self
            .find(key)
            .map(|i| stored::handles(&self.remove(i).pieces))
            .unwrap_or_default();
        self.continuity.remove_key(key);
        freed
    }

    /// Removes every entry in `[start, end]` and makes that part of the
    /// ring discontinuous. Returns the objects to free.
    pub(crate) fn invalidate_range(&mut self, start: Point, end: Point) -> Vec<Handle> {
        let doomed: Vec<usize> = if start <= end {
            self.by_key
                .range::<dyn RingKey, _>((
                    Bound::Included(Probe::of(&start).as_dyn()),
                    Bound::Included(Probe::of(&end).as_dyn()),
                ))
                .map(|(_, &i)| i)
                .collect()
        } else {
            Vec::new()
        };
        let out = doomed
            .into_iter()
            .flat_map(|i| stored::handles(&self.remove(i).pieces))
            .collect();
        self.continuity.remove_range(start, end);
        out
    }

    fn push_newest(&mut self, i: usize) {
        self.entries[i].older = self.newest;
        self.entries[i].newer = None;
        if let Some(n) = self.newest {
            self.entries[n].newer = Some(i);
        }
        self.newest = Some(i);
        if self.oldest.is_none() {
            self.oldest = Some(i);
        }
    }

    fn unlink_lru(&mut self, i: usize) {
        let (newer, older) = (self.entries[i].newer, self.entries[i].older);
        match newer {
            Some(n) => self.entries[n].older = older,
            None => self.newest = older,
        }
        match older {
            Some(o) => self.entries[o].newer = newer,
            None => self.oldest = newer,
        }
        self.entries[i].newer = None;
        self.entries[i].older = None;
    }

    /// Recounts the index: LRU list, key map, byte total. Returns the
    /// number of region objects the entries hold.
    pub(crate) fn check(&self) -> Result<usize, String> {
        let mut seen = 0;
        let mut at = self.newest;
        let mut prev = None;
        while let Some(i) = at {
            let e = self.entries.get(i).ok_or("LRU names a missing entry")?;
            if e.newer != prev {
                return Err(format!("LRU back link of entry {i} is broken"));
            }
            seen += 1;
            if seen > self.entries.len() {
                return Err("LRU list has a cycle".into());
            }
            prev = at;
            at = e.older;
        }
        if prev != self.oldest {
            return Err("LRU tail is wrong".into());
        }
        if seen != self.entries.len() || self.by_key.len() != self.entries.len() {
            return Err(format!(
                "{} entries, {} in the LRU, {} in the key map",
                self.entries.len(),
                seen,
                self.by_key.len()
            ));
        }
        for (i, e) in &self.entries {
            if e.len != stored::total_len(&e.pieces) {
                return Err(format!("entry {i}'s length disagrees with its pieces"));
            }
        }
        let bytes: usize = self.entries.iter().map(|(_, e)| e.len).sum();
        if bytes != self.stored_bytes {
            return Err(format!(
                "stored bytes {} but entries sum to {bytes}",
                self.stored_bytes
            ));
        }
        for (p, &i) in &self.by_key {
            if *p != Point::Key(self.entries[i].key.clone(), AT) {
                return Err(format!("key map entry {i} is under another key"));
            }
        }
        Ok(self
            .entries
            .iter()
            .map(|(_, e)| stored::handles(&e.pieces).len())
            .sum())
    }
}
