//! The cache: construction, population, update at flush, eviction,
//! statistics.

use std::fmt;

use logalloc::{Eviction, Handle, Region, RegionId, RegionListener, SegmentPool};
use mutation::{ClusteringRange, DecoratedKey, FragmentReader, Mutation, PartitionRange};

use crate::Error;
use crate::index::Index;
use crate::point::{AFTER, BEFORE, Point};
use crate::reader::CacheReader;
use crate::slice::next_partition;
use crate::source::UnderlyingSource;
use crate::stats::{CacheStats, Counters, UpdateStats};
use crate::stored::{self, Piece};
use crate::sync::{Arc, Mutex, RwLock};

/// How a [`RowCache`] is set up.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CacheConfig {
    /// The most bytes of encoded partitions the cache keeps on its own
    /// (least recently used partitions are evicted beyond it); `None`: no
    /// budget of its own, the cache grows until the pool runs dry and
    /// logalloc evicts it. Between one segment and the pool's memory limit.
    pub max_bytes: Option<usize>,
    /// About how many bytes of rows one piece of a wide partition holds
    /// (see the crate documentation); `None`: [`DEFAULT_PIECE_BYTES`]. At
    /// least 1.
    pub piece_bytes: Option<usize>,
    /// The underlying source is empty now (a new table, no sstables yet):
    /// the whole ring starts continuous, as ScyllaDB's `is_continuous::yes`
    /// for a table's new cache, so a read of any key is answered without
    /// the source until something changes it; what later flushes bring in
    /// is inserted ([`RowCache::update_from`]). Wrong for a source that
    /// holds data: it would hide it.
    pub continuous: bool,
}

/// The default [`CacheConfig::piece_bytes`].
pub const DEFAULT_PIECE_BYTES: usize = 32 << 10;

impl CacheConfig {
    /// The default with `piece_bytes`.
    pub fn with_piece_bytes(mut self, piece_bytes: usize) -> Self {
        self.piece_bytes = Some(piece_bytes);
        self
    }

    /// The default with `continuous` (see [`CacheConfig::continuous`]).
    pub fn with_continuous(mut self, continuous: bool) -> Self {
        self.continuous = continuous;
        self
    }

    /// The default (no budget of its own) with `max_bytes`.
    pub fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = Some(max_bytes);
        self
    }
}

/// What the cache's reader and the eviction callback share.
pub(crate) struct Shared {
    /// The leaf lock (see `index.rs`); an `Arc` because the eviction
    /// callback, owned by the region, holds it too.
    pub(crate) index: Arc<Mutex<Index>>,
    pub(crate) region: RwLock<Region>,
    /// Serialises updates at flush.
    updating: Mutex<()>,
    pub(crate) source: Arc<dyn UnderlyingSource>,
    pub(crate) counters: Arc<Counters>,
    max_bytes: Option<usize>,
    piece_bytes: usize,
}

/// A populated partition, or the news that a range holds none.
pub(crate) struct Population<'a> {
    /// The partition read, restricted to `covered`.
    pub(crate) partition: Option<&'a Mutation>,
    pub(crate) covered: &'a ClusteringRange,
    /// A range of the ring the read showed complete.
    pub(crate) continuous: Option<(Point, Point)>,
    /// The phase the source was opened in.
    pub(crate) phase: u64,
}

impl Shared {
    /// Inserts what a read learned, unless an update at flush began since
    /// the read opened its source (the population-phase rule). Returns
    /// whether it was taken.
    pub(crate) fn populate(&self, p: Population<'_>) -> bool {
        let stored = match p.partition {
            Some(m) => match stored::store(&mut self.region.write(), m, self.piece_bytes) {
                Ok(pieces) => Some((m.key().clone(), pieces)),
                Err(_) => {
                    Counters::add(&self.counters.population_failures, 1);
                    return false;
                }
            },
            None => None,
        };
        let mut to_free = Vec::new();
        let taken = {
            let mut idx = self.index.lock();
            if idx.phase != p.phase {
                if let Some((_, pieces)) = stored {
                    to_free = stored::handles(&pieces);
                }
                false
            } else {
                if let Some((key, pieces)) = stored {
                    match idx.find(&key) {
                        Some(i) if crate::slice::slice_covers(&idx.entry(i).covered, p.covered) => {
                            idx.touch(i);
                            to_free = stored::handles(&pieces);
                        }
                        Some(i) => to_free = idx.replace(i, pieces, p.covered.clone()),
                        None => idx.insert(key, pieces, p.covered.clone()),
                    }
                }
                if let Some((s, e)) = p.continuous {
                    idx.continuity.insert(s, e);
                }
                true
            }
        };
        Counters::add(
            if taken {
                &self.counters.populations
            } else {
                &self.counters.population_refusals
            },
            1,
        );
        self.free(to_free);
        if taken {
            self.shrink_to_budget();
        }
        taken
    }

    /// Frees objects already unlinked from the index.
    pub(crate) fn free(&self, handles: Vec<Handle>) {
        if handles.is_empty() {
            return;
        }
        let mut region = self.region.write();
        for h in handles {
            let _ = region.free(h);
        }
    }

    /// Evicts least recently used partitions while over the budget.
    fn shrink_to_budget(&self) {
        let Some(max) = self.max_bytes else { return };
        loop {
            let victim = {
                let mut idx = self.index.lock();
                if idx.stored_bytes <= max {
                    return;
                }
                idx.evict_oldest()
            };
            let Some(handles) = victim else { return };
            Counters::add(&self.counters.evictions, 1);
            self.free(handles);
        }
    }

    /// Loads the pieces of `key` that `slice` needs, as one mutation;
    /// `Ok(None)` if one was evicted meanwhile.
    pub(crate) fn load(
        &self,
        key: &DecoratedKey,
        pieces: &[Piece],
        slice: &ClusteringRange,
    ) -> Result<Option<Mutation>, Error> {
        let bytes = {
            let region = self.region.read();
            let reader = region.reader();
            stored::copy_out(&reader, pieces, slice)
        };
        let Some(bytes) = bytes else { return Ok(None) };
        stored::decode(bytes)
            .map(Some)
            .map_err(|source| Error::Corrupt {
                key: key.to_string(),
                source,
            })
    }
}

/// A cache of partitions in a logalloc region, in front of an
/// [`UnderlyingSource`]; see the [crate documentation](crate).
pub struct RowCache {
    shared: Arc<Shared>,
}

impl fmt::Debug for RowCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RowCache")
            .field("stats", &self.stats())
            .finish()
    }
}

impl RowCache {
    /// A cache in a new region of `pool` (the memtables' pool), in front
    /// of `source`. The region is evictable: when an allocation anywhere
    /// in the pool finds no free segment, logalloc calls the cache, which
    /// evicts its least recently used partition.
    ///
    /// # Errors
    /// [`Error::BudgetOutOfRange`] for a `max_bytes` below one segment or
    /// above the pool's memory limit, [`Error::PieceBytesZero`] for a
    /// `piece_bytes` of 0.
    pub fn new(
        pool: &Arc<SegmentPool>,
        source: Arc<dyn UnderlyingSource>,
        config: CacheConfig,
    ) -> Result<RowCache, Error> {
        if let Some(bytes) = config.max_bytes {
            let (min, max) = (pool.segment_size(), pool.memory_limit());
            if bytes < min || bytes > max {
                return Err(Error::BudgetOutOfRange { bytes, min, max });
            }
        }
        let piece_bytes = config.piece_bytes.unwrap_or(DEFAULT_PIECE_BYTES);
        if piece_bytes == 0 {
            return Err(Error::PieceBytesZero);
        }
        let mut index = Index::default();
        if config.continuous {
            index.continuity.insert(Point::Min, Point::Max);
        }
        let index = Arc::new(Mutex::new(index));
        let counters = Arc::new(Counters::default());
        let mut region = Region::new(pool);
        {
            let index = Arc::clone(&index);
            let counters = Arc::clone(&counters);
            // One call evicts about a segment's worth of the least recently
            // used data, not one partition: logalloc bounds the reclaim
            // steps of one allocation, and freed objects only give a
            // segment back once compaction can empty one, so evicting a
            // partition per step left a pool full of small partitions
            // short of memory while the cache still held plenty.
            let batch = pool.segment_size();
            region.set_eviction_fn(move |evictor| {
                // The index lock is a leaf: whoever holds it holds no
                // region, so waiting for it here cannot deadlock.
                let mut idx = index.lock();
                let start = idx.stored_bytes;
                let mut freed = Vec::new();
                let mut evicted = 0;
                while start - idx.stored_bytes < batch {
                    let Some(handles) = idx.evict_oldest() else {
                        break;
                    };
                    freed.extend(handles);
                    evicted += 1;
                }
                drop(idx);
                if evicted == 0 {
                    return Eviction::Nothing;
                }
                for h in freed {
                    let _ = evictor.free(h);
                }
                Counters::add(&counters.evictions, evicted);
                Eviction::Evicted
            });
        }
        Ok(RowCache {
            shared: Arc::new(Shared {
                index,
                region: RwLock::new(region),
                updating: Mutex::new(()),
                source,
                counters,
                max_bytes: config.max_bytes,
                piece_bytes,
            }),
        })
    }

    /// A reader of `range` with each partition restricted to `slice`:
    /// cached partitions come from the cache, the rest from the underlying
    /// source (and populate the cache).
    pub fn make_reader(&self, range: PartitionRange, slice: ClusteringRange) -> CacheReader {
        CacheReader::new(Arc::clone(&self.shared), range, slice)
    }

    /// As [`make_reader`](Self::make_reader), but `None`, without
    /// allocating and without touching the source, when the cache knows the
    /// range holds nothing (it is continuous and has no entry).
    pub fn make_reader_opt(
        &self,
        range: PartitionRange,
        slice: ClusteringRange,
    ) -> Option<CacheReader> {
        CacheReader::new_opt(&self.shared, range, slice)
    }

    /// Brings a flushed memtable's data into the cache. Call it after the
    /// memtable's sstable is committed to the underlying source, with a
    /// reader of the whole memtable, and keep the memtable's memory
    /// accounted (its region in the dirty group) until this returns.
    ///
    /// Each flushed partition is merged into its cached entry (restricted
    /// to the rows the entry holds), or inserted whole where its key is in
    /// a continuous range; elsewhere the cache holds nothing of it and
    /// stays so. Population that read the source before this call began is
    /// refused from now on. A partition that cannot be stored (the pool is
    /// out of memory even after eviction) is invalidated instead: its
    /// entry is dropped and its neighbourhood made discontinuous.
    ///
    /// The data is copied (encoded into the cache's region), not moved by
    /// a region merge: see the crate documentation for why.
    ///
    /// # Errors
    /// [`Error::UpdateStream`] if `flushed` fails, [`Error::Corrupt`] if a
    /// cached partition no longer decodes; everything from the failed
    /// partition on is invalidated first.
    pub fn update_from(&self, flushed: &mut dyn FragmentReader) -> Result<UpdateStats, Error> {
        let shared = &*self.shared;
        let _serial = shared.updating.lock();
        shared.index.lock().phase += 1;
        let mut stats = UpdateStats::default();
        let mut last: Option<DecoratedKey> = None;
        let failure = loop {
            let p = match next_partition(flushed) {
                Ok(Some(p)) => p,
                Ok(None) => break None,
                Err(source) => {
                    let from = match &last {
                        Some(k) => Point::Key(k.clone(), AFTER),
                        None => Point::Min,
                    };
                    break Some((
                        from,
                        Error::UpdateStream {
                            partitions: stats.partitions,
                            source,
                        },
                    ));
                }
            };
            stats.partitions += 1;
            let key = p.key().clone();
            if let Err(e) = self.update_one(p, &mut stats) {
                break Some((Point::Key(key, BEFORE), e));
            }
            last = Some(key);
        };
        Counters::add(&shared.counters.update_merged, stats.merged as u64);
        Counters::add(&shared.counters.update_inserted, stats.inserted as u64);
        Counters::add(
            &shared.counters.update_invalidated,
            stats.invalidated as u64,
        );
        Counters::add(&shared.counters.update_bytes, stats.bytes_copied as u64);
        if let Some((from, e)) = failure {
            // What the update did not bring in must not be answered from
            // the cache: drop it and make it discontinuous.
            let doomed = shared.index.lock().invalidate_range(from, Point::Max);
            shared.free(doomed);
            return Err(e);
        }
        shared.shrink_to_budget();
        Ok(stats)
    }

    /// Brings one flushed partition in. The entry may change under it
    /// (a population that read the new sstable, a trimmed tail, an
    /// eviction): whenever the entry is not what it merged into, it looks
    /// again, and after a few rounds gives up and invalidates the key.
    fn update_one(&self, p: Mutation, stats: &mut UpdateStats) -> Result<(), Error> {
        const ROUNDS: usize = 4;
        let shared = &*self.shared;
        let key = p.key().clone();
        for _ in 0..ROUNDS {
            let (cached, continuous) = {
                let idx = shared.index.lock();
                match idx.find(&key) {
                    Some(i) => (Some(idx.snapshot(i)), false),
                    None => (None, idx.continuity.contains_key(&key)),
                }
            };
            let Some(snap) = cached else {
                if continuous {
                    let stored = stored::store(&mut shared.region.write(), &p, shared.piece_bytes);
                    let mut idx = shared.index.lock();
                    let to_free = match stored {
                        Ok(pieces) if idx.find(&key).is_some() => {
                            // A population got there first: merge into it.
                            drop(idx);
                            shared.free(stored::handles(&pieces));
                            continue;
                        }
                        Ok(pieces) if idx.continuity.contains_key(&key) => {
                            stats.inserted += 1;
                            stats.bytes_copied += stored::total_len(&pieces);
                            idx.insert(key, pieces, ClusteringRange::full());
                            Vec::new()
                        }
                        // Evicted around it meanwhile: nothing to claim.
                        Ok(pieces) => stored::handles(&pieces),
                        Err(_) => {
                            stats.invalidated += 1;
                            idx.invalidate_key(&key)
                        }
                    };
                    drop(idx);
                    shared.free(to_free);
                }
                return Ok(());
            };
            let all = ClusteringRange::full();
            let Some(mut old) = shared.load(&key, &snap.pieces, &all)? else {
                continue; // a piece went since the lookup: look again
            };
            let flushed = crate::reader::restrict(p.clone(), &snap.covered);
            if old.apply(flushed).is_err() {
                break; // the same key: cannot happen
            }
            let stored = stored::store(&mut shared.region.write(), &old, shared.piece_bytes);
            let mut idx = shared.index.lock();
            let to_free = match (stored, idx.find(&key)) {
                (Ok(pieces), Some(i)) if idx.entry(i).version == snap.version => {
                    stats.merged += 1;
                    stats.bytes_copied += stored::total_len(&pieces);
                    idx.replace(i, pieces, snap.covered.clone())
                }
                (Ok(pieces), Some(_)) => {
                    // Changed since the lookup: look again.
                    drop(idx);
                    shared.free(stored::handles(&pieces));
                    continue;
                }
                // Evicted (its neighbourhood made discontinuous).
                (Ok(pieces), None) => stored::handles(&pieces),
                (Err(_), _) => {
                    stats.invalidated += 1;
                    idx.invalidate_key(&key)
                }
            };
            drop(idx);
            shared.free(to_free);
            return Ok(());
        }
        stats.invalidated += 1;
        let doomed = shared.index.lock().invalidate_key(&key);
        shared.free(doomed);
        Ok(())
    }

    /// Drops every cached partition in `range` and makes the range
    /// discontinuous (for a truncate, or data that changed behind the
    /// cache's back).
    pub fn invalidate(&self, range: &PartitionRange) {
        let shared = &*self.shared;
        let doomed = {
            let mut idx = shared.index.lock();
            // A population that read the range before this must not
            // bring it back.
            idx.phase += 1;
            idx.invalidate_range(Point::start(range.start()), Point::end(range.end()))
        };
        shared.free(doomed);
    }

    /// Evicts up to `n` least recently used partitions, as logalloc's
    /// eviction does; returns how many went.
    pub fn evict(&self, n: usize) -> usize {
        let shared = &*self.shared;
        let mut done = 0;
        while done < n {
            let Some(handles) = shared.index.lock().evict_oldest() else {
                break;
            };
            Counters::add(&shared.counters.evictions, 1);
            shared.free(handles);
            done += 1;
        }
        done
    }

    /// Evicts everything and forgets all continuity.
    pub fn clear(&self) {
        let shared = &*self.shared;
        let doomed = {
            let mut idx = shared.index.lock();
            idx.phase += 1;
            idx.invalidate_range(Point::Min, Point::Max)
        };
        shared.free(doomed);
    }

    /// The cache region's id (to recognise it in a listener).
    pub fn region_id(&self) -> RegionId {
        self.shared.region.read().id()
    }

    /// Reports the cache region's memory to `listener` (for example a
    /// region group that shows the cache's share of the pool; it should
    /// not be the dirty-memory group, which the cache is not part of).
    pub fn listen(&self, listener: std::sync::Arc<dyn RegionListener>) {
        self.shared.region.write().listen(listener);
    }

    /// A snapshot of the cache's counters and sizes.
    pub fn stats(&self) -> CacheStats {
        let shared = &*self.shared;
        let (partitions, stored_bytes, continuous_ranges) = {
            let idx = shared.index.lock();
            (idx.len(), idx.stored_bytes, idx.continuity.len())
        };
        let region = shared.region.read().stats();
        shared
            .counters
            .snapshot(partitions, stored_bytes, continuous_ranges, region)
    }

    /// Recounts the index and checks that the region holds exactly the
    /// entries' objects (for tests; call it with no operation running).
    ///
    /// # Errors
    /// A description of the first inconsistency.
    pub fn check_invariants(&self) -> Result<(), String> {
        let objects = self.shared.index.lock().check()?;
        let region = self.shared.region.read();
        region.check_invariants()?;
        let held = region.stats().objects;
        if held != objects {
            return Err(format!(
                "the region holds {held} objects, the entries {objects}"
            ));
        }
        Ok(())
    }
}
