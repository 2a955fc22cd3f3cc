//! The caches' index: every cache's entries in ring order, one LRU list
//! over the entries of every cache of a tracker, each cache's continuity
//! set and population phase. It lives on the heap behind one mutex, the
//! tracker's (bounded: one small entry per cached partition); the
//! partitions' bytes live in the tracker's region.
//!
//! **The index lock is a leaf.** Nothing else is locked while it is held:
//! no region access, no other lock. That is what lets the eviction callback,
//! which runs with the region locked, take it and wait for it.
//!
//! One lock for every cache of a tracker (ScyllaDB's `cache_tracker` is
//! one per shard, its LRU shared by every table) is what makes eviction
//! global: the least recently used entry of any cache goes first, and it
//! leaves its cache's key map and continuity in the same critical section.

use std::collections::BTreeMap;
use std::ops::Bound;

use logalloc::Handle;
use mutation::{ClusteringRange, DecoratedKey, Position};
use slab::Slab;

use crate::point::{AT, Continuity, Point, Probe, RingKey};
use crate::stored::{self, Pieces};

/// A cache's slot in its tracker's index.
pub(crate) type CacheId = usize;

/// One cached partition.
#[derive(Debug)]
pub(crate) struct Entry {
    /// The cache it belongs to.
    owner: CacheId,
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
    pub(crate) pieces: Pieces,
    pub(crate) covered: ClusteringRange,
    pub(crate) version: u64,
}

/// One cache's part of the index.
#[derive(Debug, Default)]
pub(crate) struct CacheIndex {
    by_key: BTreeMap<Point, usize>,
    pub(crate) continuity: Continuity,
    /// Advanced by every update at flush and invalidation of this cache; a
    /// population carries the phase it read the source in and is refused
    /// if it changed.
    pub(crate) phase: u64,
    /// Sum of this cache's entries' encoded lengths.
    pub(crate) stored_bytes: usize,
    /// Entries (or tails of entries) of this cache evicted, by whoever
    /// evicted them.
    pub(crate) evictions: u64,
}

impl CacheIndex {
    /// Partitions this cache holds.
    pub(crate) fn len(&self) -> usize {
        self.by_key.len()
    }
}

/// The index of every cache of a tracker; see the module documentation.
#[derive(Debug, Default)]
pub(crate) struct Index {
    entries: Slab<Entry>,
    caches: Slab<CacheIndex>,
    newest: Option<usize>,
    oldest: Option<usize>,
    next_version: u64,
    /// Sum of every entry's encoded length (what the tracker's budget
    /// counts).
    pub(crate) stored_bytes: usize,
    /// Evictions of every cache.
    pub(crate) evictions: u64,
}

impl Index {
    /// Adds an empty cache.
    pub(crate) fn add_cache(&mut self) -> CacheId {
        self.caches.insert(CacheIndex::default())
    }

    /// Removes cache `c` with all its entries; returns their objects (to
    /// free).
    pub(crate) fn remove_cache(&mut self, c: CacheId) -> Vec<Handle> {
        let doomed: Vec<usize> = self.caches[c].by_key.values().copied().collect();
        let out = doomed
            .into_iter()
            .flat_map(|i| stored::handles(&self.remove(i).pieces))
            .collect();
        self.caches.remove(c);
        out
    }

    /// How many caches there are.
    pub(crate) fn caches(&self) -> usize {
        self.caches.len()
    }

    pub(crate) fn cache(&self, c: CacheId) -> &CacheIndex {
        &self.caches[c]
    }

    pub(crate) fn cache_mut(&mut self, c: CacheId) -> &mut CacheIndex {
        &mut self.caches[c]
    }

    /// Partitions of every cache.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The entry of `key` in cache `c`.
    pub(crate) fn find(&self, c: CacheId, key: &DecoratedKey) -> Option<usize> {
        self.caches[c]
            .by_key
            .get::<dyn RingKey>(Probe::key(key, AT).as_dyn())
            .copied()
    }

    /// The first entry of cache `c` whose key lies in `[start, end]`.
    pub(crate) fn first_in(&self, c: CacheId, start: Probe<'_>, end: Probe<'_>) -> Option<usize> {
        if start.as_dyn() > end.as_dyn() {
            return None;
        }
        self.caches[c]
            .by_key
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
            pieces: Pieces::clone(&e.pieces),
            covered: e.covered.clone(),
            version: e.version,
        }
    }

    /// Marks entry `i` most recently used (of every cache).
    pub(crate) fn touch(&mut self, i: usize) {
        if self.newest == Some(i) {
            return;
        }
        self.unlink_lru(i);
        self.push_newest(i);
    }

    /// Adds an entry to cache `c` (the key must be absent there) as the
    /// most recently used.
    pub(crate) fn insert(
        &mut self,
        c: CacheId,
        key: DecoratedKey,
        pieces: Pieces,
        covered: ClusteringRange,
    ) {
        self.next_version += 1;
        let len = stored::total_len(&pieces);
        let i = self.entries.insert(Entry {
            owner: c,
            key: key.clone(),
            pieces,
            len,
            covered,
            version: self.next_version,
            newer: None,
            older: None,
        });
        let cache = &mut self.caches[c];
        cache.by_key.insert(Point::Key(key, AT), i);
        cache.stored_bytes += len;
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
        let old_len = e.len;
        e.len = len;
        e.covered = covered;
        e.version = self.next_version;
        let old = std::mem::replace(&mut e.pieces, pieces);
        let cache = &mut self.caches[e.owner];
        cache.stored_bytes = cache.stored_bytes - old_len + len;
        self.stored_bytes = self.stored_bytes - old_len + len;
        self.touch(i);
        stored::handles(&old)
    }

    /// Removes entry `i` (continuity untouched); returns it.
    pub(crate) fn remove(&mut self, i: usize) -> Entry {
        self.unlink_lru(i);
        let e = self.entries.remove(i);
        let cache = &mut self.caches[e.owner];
        cache
            .by_key
            .remove::<dyn RingKey>(Probe::key(&e.key, AT).as_dyn());
        cache.stored_bytes -= e.len;
        self.stored_bytes -= e.len;
        e
    }

    /// Evicts from the least recently used entry of every cache (see
    /// [`evict_entry`](Self::evict_entry)). Returns the objects to free,
    /// or `None` if every cache is empty.
    pub(crate) fn evict_oldest(&mut self) -> Option<Vec<Handle>> {
        let i = self.oldest?;
        Some(self.evict_entry(i))
    }

    /// As [`evict_oldest`](Self::evict_oldest), among cache `c`'s entries
    /// only (walks the LRU list from its old end: for tests and
    /// administration, not the eviction path).
    pub(crate) fn evict_oldest_of(&mut self, c: CacheId) -> Option<Vec<Handle>> {
        let mut at = self.oldest;
        while let Some(i) = at {
            if self.entries[i].owner == c {
                return Some(self.evict_entry(i));
            }
            at = self.entries[i].newer;
        }
        None
    }

    /// Evicts from entry `i`: its last piece if it has several (the entry
    /// then covers only the rows before that piece, and keeps its place in
    /// the LRU list), else the whole entry, making its neighbourhood
    /// discontinuous in its cache. Counts the eviction for the entry's
    /// cache and in total. Returns the objects to free.
    fn evict_entry(&mut self, i: usize) -> Vec<Handle> {
        let owner = self.entries[i].owner;
        self.caches[owner].evictions += 1;
        self.evictions += 1;
        if let Some(freed) = self.evict_tail(i) {
            return freed;
        }
        let e = self.remove(i);
        self.caches[owner].continuity.remove_key(&e.key);
        stored::handles(&e.pieces)
    }

    /// Drops entry `i`'s last piece if it has more than one.
    fn evict_tail(&mut self, i: usize) -> Option<Vec<Handle>> {
        let e = &mut self.entries[i];
        let (last, rest) = e.pieces.split_last()?;
        let first = last.first.clone()?;
        let covered =
            ClusteringRange::from_positions(&e.covered.start_position(), &Position::Before(first))
                .ok()?;
        let freed = last.data.handles();
        let cut = last.len;
        e.len -= cut;
        e.pieces = rest.to_vec().into();
        e.covered = covered;
        self.next_version += 1;
        e.version = self.next_version;
        self.caches[e.owner].stored_bytes -= cut;
        self.stored_bytes -= cut;
        Some(freed)
    }

    /// Removes the entry of `key` in cache `c` if any and makes its
    /// neighbourhood discontinuous. Returns the objects to free.
    pub(crate) fn invalidate_key(&mut self, c: CacheId, key: &DecoratedKey) -> Vec<Handle> {
        let freed = self
            .find(c, key)
            .map(|i| stored::handles(&self.remove(i).pieces))
            .unwrap_or_default();
        self.caches[c].continuity.remove_key(key);
        freed
    }

    /// Removes every entry of cache `c` in `[start, end]` and makes that
    /// part of its ring discontinuous. Returns the objects to free.
    pub(crate) fn invalidate_range(&mut self, c: CacheId, start: Point, end: Point) -> Vec<Handle> {
        let doomed: Vec<usize> = if start <= end {
            self.caches[c]
                .by_key
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
        self.caches[c].continuity.remove_range(start, end);
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

    /// Recounts the index: LRU list, key maps, byte totals. Returns the
    /// number of region objects the entries of every cache hold.
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
        let mapped: usize = self.caches.iter().map(|(_, c)| c.by_key.len()).sum();
        if seen != self.entries.len() || mapped != self.entries.len() {
            return Err(format!(
                "{} entries, {} in the LRU, {} in the key maps",
                self.entries.len(),
                seen,
                mapped
            ));
        }
        for (i, e) in &self.entries {
            if e.len != stored::total_len(&e.pieces) {
                return Err(format!("entry {i}'s length disagrees with its pieces"));
            }
            if !self.caches.contains(e.owner) {
                return Err(format!("entry {i} belongs to a removed cache"));
            }
        }
        let bytes: usize = self.entries.iter().map(|(_, e)| e.len).sum();
        if bytes != self.stored_bytes {
            return Err(format!(
                "stored bytes {} but entries sum to {bytes}",
                self.stored_bytes
            ));
        }
        let mut evictions = 0;
        for (c, cache) in &self.caches {
            evictions += cache.evictions;
            let mut bytes = 0;
            for (p, &i) in &cache.by_key {
                let e = self
                    .entries
                    .get(i)
                    .ok_or("a key map names a missing entry")?;
                if e.owner != c {
                    return Err(format!(
                        "cache {c}'s key map names entry {i} of cache {}",
                        e.owner
                    ));
                }
                if *p != Point::Key(e.key.clone(), AT) {
                    return Err(format!("key map entry {i} is under another key"));
                }
                bytes += e.len;
            }
            if bytes != cache.stored_bytes {
                return Err(format!(
                    "cache {c} counts {} stored bytes but its entries sum to {bytes}",
                    cache.stored_bytes
                ));
            }
        }
        if evictions > self.evictions {
            return Err(format!(
                "the caches count {evictions} evictions, more than the {} in total",
                self.evictions
            ));
        }
        Ok(self
            .entries
            .iter()
            .map(|(_, e)| stored::handle_count(&e.pieces))
            .sum())
    }
}
