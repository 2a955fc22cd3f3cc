//! The cache: the tracker its caches share (region, LRU, budget),
//! construction, population, update at flush, eviction, statistics.

use std::fmt;

use logalloc::{Eviction, Handle, Region, RegionId, RegionListener, SegmentPool};
use memtable::Memtable;
use memtable::handover::HandedPartition;
use mutation::{ClusteringRange, DecoratedKey, FragmentReader, Mutation, PartitionRange};

use crate::Error;
use crate::index::{CacheId, Index};
use crate::point::{AFTER, BEFORE, Point};
use crate::reader::CacheReader;
use crate::slice::next_wanted_partition;
use crate::source::UnderlyingSource;
use crate::stats::{CacheStats, Counters, Sizes, TrackerStats, UpdateStats};
use crate::stored::{self, Piece};
use crate::sync::{Arc, Mutex, PlainArc, RwLock};

/// How a [`RowCache`] is set up.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CacheConfig {
    /// For [`RowCache::new`], the budget of the cache's own tracker: the
    /// most bytes of encoded partitions it keeps (least recently used
    /// partitions are evicted beyond it); `None`: no budget, the cache
    /// grows until the pool runs dry and logalloc evicts it. Between one
    /// segment and the pool's memory limit. Must be `None` for
    /// [`RowCache::with_tracker`]: the shared tracker's budget
    /// ([`CacheTracker::new`]) bounds all its caches together.
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

/// What every cache of a tracker shares: the index (every cache's
/// entries and the one LRU list), the region, the budget.
pub(crate) struct TrackerShared {
    /// The leaf lock (see `index.rs`); an `Arc` because the eviction
    /// callback, owned by the region, holds it too.
    pub(crate) index: Arc<Mutex<Index>>,
    pub(crate) region: RwLock<Region>,
    max_bytes: Option<usize>,
}

impl TrackerShared {
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

    /// Evicts the least recently used partitions of every cache while
    /// the caches together are over the budget.
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
            self.free(handles);
        }
    }
}

/// The shared part of the row caches of one database: one logalloc region
/// for every cache's partitions, one LRU list over all of them, and one
/// budget ([`CacheTracker::new`]'s `max_bytes`) bounding their sum, as
/// ScyllaDB's per-shard `cache_tracker` is shared by every table's cache.
/// Eviction (the budget's, or logalloc's when the pool runs dry) takes the
/// least recently used partition of whichever cache holds it.
///
/// Each table's [`RowCache`] is made with
/// [`RowCache::with_tracker`]; [`RowCache::new`] makes a tracker of its
/// own. A tracker is a handle: clones share the same tracker.
///
/// ```
/// use std::sync::Arc;
/// use logalloc::{PoolConfig, SegmentPool};
/// use mutation::{ClusteringRange, FragmentReader, PartitionRange, from_mutations};
/// use row_cache::{CacheConfig, CacheTracker, RowCache, UnderlyingSource};
///
/// struct Empty;
/// impl UnderlyingSource for Empty {
///     fn make_reader(
///         &self,
///         _range: PartitionRange,
///         _slice: ClusteringRange,
///     ) -> Result<Box<dyn FragmentReader + Send>, mutation::Error> {
///         Ok(Box::new(from_mutations(Vec::new())))
///     }
/// }
///
/// let pool = SegmentPool::new(PoolConfig::default().with_memory_limit(16 << 20))?;
/// // One budget for both tables' caches together.
/// let tracker = CacheTracker::new(&pool, Some(4 << 20))?;
/// let users = RowCache::with_tracker(&tracker, Arc::new(Empty), CacheConfig::default())?;
/// let orders = RowCache::with_tracker(&tracker, Arc::new(Empty), CacheConfig::default())?;
/// assert_eq!(tracker.stats().caches, 2);
/// assert_eq!(users.region_id(), orders.region_id());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct CacheTracker {
    shared: Arc<TrackerShared>,
}

impl fmt::Debug for CacheTracker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CacheTracker")
            .field("stats", &self.stats())
            .finish()
    }
}

impl CacheTracker {
    /// A tracker with a new region of `pool` (the memtables' pool). The
    /// region is evictable: when an allocation anywhere in the pool finds
    /// no free segment, logalloc calls the tracker, which evicts the least
    /// recently used partitions of its caches. `max_bytes`: the most bytes
    /// of encoded partitions all its caches together keep on their own
    /// (`None`: no budget, the caches grow until the pool runs dry).
    ///
    /// # Errors
    /// [`Error::BudgetOutOfRange`] for a `max_bytes` below one segment or
    /// above the pool's memory limit.
    pub fn new(
        pool: &PlainArc<SegmentPool>,
        max_bytes: Option<usize>,
    ) -> Result<CacheTracker, Error> {
        if let Some(bytes) = max_bytes {
            let (min, max) = (pool.segment_size(), pool.memory_limit());
            if bytes < min || bytes > max {
                return Err(Error::BudgetOutOfRange { bytes, min, max });
            }
        }
        let index = Arc::new(Mutex::new(Index::default()));
        let mut region = Region::new(pool);
        {
            let index = Arc::clone(&index);
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
                Eviction::Evicted
            });
        }
        Ok(CacheTracker {
            shared: Arc::new(TrackerShared {
                index,
                region: RwLock::new(region),
                max_bytes,
            }),
        })
    }

    /// The budget of all its caches together (`None`: none).
    pub fn max_bytes(&self) -> Option<usize> {
        self.shared.max_bytes
    }

    /// Evicts up to `n` least recently used partitions (or tails of wide
    /// ones) of any of its caches, as logalloc's eviction does; returns
    /// how many went.
    pub fn evict(&self, n: usize) -> usize {
        let mut done = 0;
        while done < n {
            let Some(handles) = self.shared.index.lock().evict_oldest() else {
                break;
            };
            self.shared.free(handles);
            done += 1;
        }
        done
    }

    /// The region's id (to recognise it in a listener).
    pub fn region_id(&self) -> RegionId {
        self.shared.region.read().id()
    }

    /// Reports the region's memory (every cache of the tracker) to
    /// `listener` (for example a region group that shows the caches' share
    /// of the pool; it should not be the dirty-memory group, which the
    /// caches are not part of).
    pub fn listen(&self, listener: PlainArc<dyn RegionListener>) {
        self.shared.region.write().listen(listener);
    }

    /// A snapshot of the totals of every cache of the tracker.
    pub fn stats(&self) -> TrackerStats {
        let (caches, partitions, stored_bytes, evictions) = {
            let idx = self.shared.index.lock();
            (idx.caches(), idx.len(), idx.stored_bytes, idx.evictions)
        };
        TrackerStats {
            caches,
            partitions,
            stored_bytes,
            evictions,
            max_bytes: self.shared.max_bytes,
            region: self.shared.region.read().stats(),
        }
    }

    /// Recounts the index (every cache's part) and checks that the region
    /// holds exactly the entries' objects (for tests; call it with no
    /// operation running).
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

/// What one cache's readers share with it.
pub(crate) struct Shared {
    pub(crate) tracker: Arc<TrackerShared>,
    /// The cache's slot in the tracker's index.
    pub(crate) id: CacheId,
    /// Serialises updates at flush.
    updating: Mutex<()>,
    pub(crate) source: PlainArc<dyn UnderlyingSource>,
    pub(crate) counters: Counters,
    piece_bytes: usize,
}

impl Drop for Shared {
    /// The cache and its last reader are gone: its entries leave the
    /// tracker and their memory goes back to the region.
    fn drop(&mut self) {
        let doomed = self.tracker.index.lock().remove_cache(self.id);
        self.tracker.free(doomed);
    }
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
    /// The tracker's index (every cache's).
    pub(crate) fn index(&self) -> &Mutex<Index> {
        &self.tracker.index
    }

    /// The cache's current population phase.
    pub(crate) fn phase(&self) -> u64 {
        self.index().lock().cache(self.id).phase
    }

    /// Inserts what a read learned, unless an update at flush began since
    /// the read opened its source (the population-phase rule). Returns
    /// whether it was taken.
    pub(crate) fn populate(&self, p: Population<'_>) -> bool {
        let c = self.id;
        let stored = match p.partition {
            Some(m) => match stored::store(&mut self.tracker.region.write(), m, self.piece_bytes) {
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
            let mut idx = self.index().lock();
            if idx.cache(c).phase != p.phase {
                if let Some((_, pieces)) = stored {
                    to_free = stored::handles(&pieces);
                }
                false
            } else {
                if let Some((key, pieces)) = stored {
                    match idx.find(c, &key) {
                        Some(i) if crate::slice::slice_covers(&idx.entry(i).covered, p.covered) => {
                            idx.touch(i);
                            to_free = stored::handles(&pieces);
                        }
                        Some(i) => to_free = idx.replace(i, pieces, p.covered.clone()),
                        None => idx.insert(c, key, pieces, p.covered.clone()),
                    }
                }
                if let Some((s, e)) = p.continuous {
                    idx.cache_mut(c).continuity.insert(s, e);
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
        self.tracker.free(to_free);
        if taken {
            self.tracker.shrink_to_budget();
        }
        taken
    }

    /// Loads the pieces of `key` that `slice` needs, as one mutation;
    /// `Ok(None)` if one was evicted meanwhile.
    pub(crate) fn load(
        &self,
        key: &DecoratedKey,
        pieces: &[Piece],
        slice: &ClusteringRange,
    ) -> Result<Option<Mutation>, Error> {
        if let Some(p) = stored::adopted(pieces) {
            // Read where it lies, under the region's read lock.
            let region = self.tracker.region.read();
            return match p.read(&region.reader(), slice) {
                Ok(m) => Ok(Some(m)),
                // An object is gone: evicted since the lookup.
                Err(memtable::Error::Region(_)) => Ok(None),
                Err(source) => Err(Error::AdoptedCorrupt {
                    key: key.to_string(),
                    source,
                }),
            };
        }
        let bytes = {
            let region = self.tracker.region.read();
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
    /// A cache in front of `source` with a tracker of its own (a new
    /// region of `pool`, the memtables' pool, and `config.max_bytes` as
    /// its budget): see [`CacheTracker::new`]. Several tables' caches
    /// that are to share one budget and one LRU are made with
    /// [`with_tracker`](Self::with_tracker) instead.
    ///
    /// # Errors
    /// [`Error::BudgetOutOfRange`] for a `max_bytes` below one segment or
    /// above the pool's memory limit, [`Error::PieceBytesZero`] for a
    /// `piece_bytes` of 0.
    pub fn new(
        pool: &PlainArc<SegmentPool>,
        source: PlainArc<dyn UnderlyingSource>,
        config: CacheConfig,
    ) -> Result<RowCache, Error> {
        let piece_bytes = Self::piece_bytes(&config)?;
        let tracker = CacheTracker::new(pool, config.max_bytes)?;
        Ok(Self::build(
            &tracker,
            source,
            piece_bytes,
            config.continuous,
        ))
    }

    /// A cache in front of `source` in `tracker`: its partitions share the
    /// tracker's region, LRU list and budget with every other cache of the
    /// tracker, so eviction takes the least recently used partition of
    /// any of them. Its statistics ([`stats`](Self::stats)) are its own.
    ///
    /// # Errors
    /// [`Error::BudgetOfSharedTracker`] if `config.max_bytes` is set (the
    /// tracker's budget is the one budget), [`Error::PieceBytesZero`] for a
    /// `piece_bytes` of 0.
    pub fn with_tracker(
        tracker: &CacheTracker,
        source: PlainArc<dyn UnderlyingSource>,
        config: CacheConfig,
    ) -> Result<RowCache, Error> {
        if let Some(bytes) = config.max_bytes {
            return Err(Error::BudgetOfSharedTracker { bytes });
        }
        let piece_bytes = Self::piece_bytes(&config)?;
        Ok(Self::build(tracker, source, piece_bytes, config.continuous))
    }

    fn piece_bytes(config: &CacheConfig) -> Result<usize, Error> {
        let piece_bytes = config.piece_bytes.unwrap_or(DEFAULT_PIECE_BYTES);
        if piece_bytes == 0 {
            return Err(Error::PieceBytesZero);
        }
        Ok(piece_bytes)
    }

    fn build(
        tracker: &CacheTracker,
        source: PlainArc<dyn UnderlyingSource>,
        piece_bytes: usize,
        continuous: bool,
    ) -> RowCache {
        let tracker = Arc::clone(&tracker.shared);
        let id = {
            let mut idx = tracker.index.lock();
            let id = idx.add_cache();
            if continuous {
                // A source known to hold nothing: the whole ring is
                // known (see `CacheConfig::continuous`).
                idx.cache_mut(id).continuity.insert(Point::Min, Point::Max);
            }
            id
        };
        RowCache {
            shared: Arc::new(Shared {
                tracker,
                id,
                updating: Mutex::new(()),
                source,
                counters: Counters::default(),
                piece_bytes,
            }),
        }
    }

    /// The tracker this cache is in.
    pub fn tracker(&self) -> CacheTracker {
        CacheTracker {
            shared: Arc::clone(&self.shared.tracker),
        }
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
    /// stays so, and the partition is skipped in `flushed`
    /// ([`FragmentReader::next_partition`]) without its rows being read. Population that read the source before this call began is
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
        let c = shared.id;
        let _serial = shared.updating.lock();
        shared.index().lock().cache_mut(c).phase += 1;
        let mut stats = UpdateStats::default();
        let mut last: Option<DecoratedKey> = None;
        let failure = loop {
            // A partition the cache neither holds nor knows to be in a
            // continuous range is left out (as `update_one` would leave it):
            // skipped in the stream, its rows never read. In a write-mostly
            // load that is nearly every partition, and the update costs a
            // lookup per partition instead of a second read of the memtable.
            let wanted = |key: &DecoratedKey| {
                let idx = shared.index().lock();
                idx.find(c, key).is_some() || idx.cache(c).continuity.contains_key(key)
            };
            let p = match next_wanted_partition(flushed, wanted, &mut stats.skipped) {
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
        stats.partitions += stats.skipped;
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
            let doomed = shared.index().lock().invalidate_range(c, from, Point::Max);
            shared.tracker.free(doomed);
            return Err(e);
        }
        shared.tracker.shrink_to_budget();
        Ok(stats)
    }

    /// Brings a flushed memtable's data into the cache by a region merge,
    /// as ScyllaDB's `row_cache::update` does: the memtable hands its
    /// region over ([`Memtable::hand_over`]), the cache's region absorbs it
    /// ([`logalloc::Region::merge`]: no object moves), and each flushed
    /// partition is then, in ring order:
    ///
    /// - **adopted where it lies** if the cache does not hold it and its
    ///   key is in a continuous range: its entry strings become the cache
    ///   entry (read in place from then on), nothing is written;
    /// - **reconciled** with the cached entry if the cache holds it (the
    ///   flushed partition is read where it lies and merged into the entry
    ///   as [`update_from`](Self::update_from) merges, which writes the
    ///   merged entry; then the flushed objects are freed);
    /// - **freed** otherwise, its range left discontinuous.
    ///
    /// `on_partition` is called after each partition (for the caller to
    /// release the memtable's pinned dirty memory as the update passes, as
    /// ScyllaDB #1942 wants). Call it when `update_from` would be called:
    /// after the memtable's sstable is committed to the underlying source.
    /// The population phase advances before any partition is taken, as for
    /// `update_from`.
    ///
    /// Returns `Ok(None)`, having done nothing, when the memtable cannot be
    /// handed over now (not sealed, a reader of it open, another pool:
    /// see [`Memtable::hand_over`]); the caller then calls `update_from`
    /// with the memtable's stream.
    ///
    /// The partitions are taken while the memtable's lock is held (see
    /// [`Memtable::hand_over`]): a read that opens a memtable reader
    /// meanwhile waits, then finds the data in the cache.
    ///
    /// # Errors
    /// [`Error::HandOver`] if the memtable's index does not decode (the
    /// memtable keeps its data; the cache invalidates the whole ring);
    /// [`Error::Corrupt`] or [`Error::AdoptedCorrupt`] if a partition to
    /// reconcile does not decode (everything from it on is invalidated).
    pub fn update_by_merge(
        &self,
        memtable: &Memtable,
        on_partition: &mut dyn FnMut(),
    ) -> Result<Option<UpdateStats>, Error> {
        let shared = &*self.shared;
        let c = shared.id;
        let _serial = shared.updating.lock();
        let pool = PlainArc::clone(shared.tracker.region.read().pool());
        let handed = memtable.hand_over(&pool, |handed| {
            shared.index().lock().cache_mut(c).phase += 1;
            let (region, partitions) = handed.into_parts();
            // The same pool (checked by `hand_over`): cannot fail.
            let merged = shared.tracker.region.write().merge(region);
            let mut stats = UpdateStats::default();
            let mut failure: Option<(DecoratedKey, Error)> = None;
            for p in partitions {
                stats.partitions += 1;
                if merged.is_err() || failure.is_some() {
                    // Nothing of it may stand in the cache (with the merge
                    // failed, its objects went with the region).
                    if merged.is_ok() {
                        shared.tracker.free(p.handles().collect());
                    }
                    stats.invalidated += 1;
                    let doomed = shared.index().lock().invalidate_key(c, p.key());
                    shared.tracker.free(doomed);
                } else {
                    let key = p.key().clone();
                    if let Err(e) = self.adopt_one(p, &mut stats) {
                        failure = Some((key, e));
                    }
                }
                on_partition();
            }
            (stats, failure)
        });
        let (stats, failure) = match handed {
            Ok(Some(done)) => done,
            Ok(None) => return Ok(None),
            Err(e) => {
                self.invalidate(&PartitionRange::full());
                return Err(Error::HandOver(e));
            }
        };
        Counters::add(&shared.counters.update_merged, stats.merged as u64);
        Counters::add(&shared.counters.update_inserted, stats.inserted as u64);
        Counters::add(
            &shared.counters.update_invalidated,
            stats.invalidated as u64,
        );
        Counters::add(&shared.counters.update_bytes, stats.bytes_copied as u64);
        Counters::add(&shared.counters.update_adopted, stats.adopted as u64);
        if let Some((key, e)) = failure {
            let doomed =
                shared
                    .index()
                    .lock()
                    .invalidate_range(c, Point::Key(key, BEFORE), Point::Max);
            shared.tracker.free(doomed);
            return Err(e);
        }
        shared.tracker.shrink_to_budget();
        Ok(Some(stats))
    }

    /// Takes one handed-over partition, whose objects the cache's region
    /// now holds (see [`update_by_merge`](Self::update_by_merge)).
    fn adopt_one(&self, p: HandedPartition, stats: &mut UpdateStats) -> Result<(), Error> {
        let shared = &*self.shared;
        let c = shared.id;
        let mut idx = shared.index().lock();
        if idx.find(c, p.key()).is_none() {
            if idx.cache(c).continuity.contains_key(p.key()) {
                stats.inserted += 1;
                stats.adopted += 1;
                stats.bytes_adopted += p.bytes();
                let key = p.key().clone();
                idx.insert(c, key, stored::adopt(p), ClusteringRange::full());
            } else {
                drop(idx);
                stats.skipped += 1;
                shared.tracker.free(p.handles().collect());
            }
            return Ok(());
        }
        drop(idx);
        // Held: reconcile the flushed partition with the entry.
        let read = {
            let region = shared.tracker.region.read();
            p.read(&region.reader(), &ClusteringRange::full())
        };
        shared.tracker.free(p.handles().collect());
        let m = read.map_err(|source| Error::AdoptedCorrupt {
            key: p.key().to_string(),
            source,
        })?;
        self.update_one(m, stats)
    }

    /// Brings one flushed partition in. The entry may change under it
    /// (a population that read the new sstable, a trimmed tail, an
    /// eviction): whenever the entry is not what it merged into, it looks
    /// again, and after a few rounds gives up and invalidates the key.
    fn update_one(&self, p: Mutation, stats: &mut UpdateStats) -> Result<(), Error> {
        const ROUNDS: usize = 4;
        let shared = &*self.shared;
        let c = shared.id;
        let key = p.key().clone();
        for _ in 0..ROUNDS {
            let (cached, continuous) = {
                let idx = shared.index().lock();
                match idx.find(c, &key) {
                    Some(i) => (Some(idx.snapshot(i)), false),
                    None => (None, idx.cache(c).continuity.contains_key(&key)),
                }
            };
            let Some(snap) = cached else {
                if continuous {
                    let stored =
                        stored::store(&mut shared.tracker.region.write(), &p, shared.piece_bytes);
                    let mut idx = shared.index().lock();
                    let to_free = match stored {
                        Ok(pieces) if idx.find(c, &key).is_some() => {
                            // A population got there first: merge into it.
                            drop(idx);
                            shared.tracker.free(stored::handles(&pieces));
                            continue;
                        }
                        Ok(pieces) if idx.cache(c).continuity.contains_key(&key) => {
                            stats.inserted += 1;
                            stats.bytes_copied += stored::total_len(&pieces);
                            idx.insert(c, key, pieces, ClusteringRange::full());
                            Vec::new()
                        }
                        // Evicted around it meanwhile: nothing to claim.
                        Ok(pieces) => stored::handles(&pieces),
                        Err(_) => {
                            stats.invalidated += 1;
                            idx.invalidate_key(c, &key)
                        }
                    };
                    drop(idx);
                    shared.tracker.free(to_free);
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
            let stored =
                stored::store(&mut shared.tracker.region.write(), &old, shared.piece_bytes);
            let mut idx = shared.index().lock();
            let to_free = match (stored, idx.find(c, &key)) {
                (Ok(pieces), Some(i)) if idx.entry(i).version == snap.version => {
                    stats.merged += 1;
                    stats.bytes_copied += stored::total_len(&pieces);
                    idx.replace(i, pieces, snap.covered.clone())
                }
                (Ok(pieces), Some(_)) => {
                    // Changed since the lookup: look again.
                    drop(idx);
                    shared.tracker.free(stored::handles(&pieces));
                    continue;
                }
                // Evicted (its neighbourhood made discontinuous).
                (Ok(pieces), None) => stored::handles(&pieces),
                (Err(_), _) => {
                    stats.invalidated += 1;
                    idx.invalidate_key(c, &key)
                }
            };
            drop(idx);
            shared.tracker.free(to_free);
            return Ok(());
        }
        stats.invalidated += 1;
        let doomed = shared.index().lock().invalidate_key(c, &key);
        shared.tracker.free(doomed);
        Ok(())
    }

    /// Drops every cached partition in `range` and makes the range
    /// discontinuous (for a truncate, or data that changed behind the
    /// cache's back).
    pub fn invalidate(&self, range: &PartitionRange) {
        let shared = &*self.shared;
        let c = shared.id;
        let doomed = {
            let mut idx = shared.index().lock();
            // A population that read the range before this must not
            // bring it back.
            idx.cache_mut(c).phase += 1;
            idx.invalidate_range(c, Point::start(range.start()), Point::end(range.end()))
        };
        shared.tracker.free(doomed);
    }

    /// Drops the cached partitions of `keys` and makes each key's
    /// neighbourhood discontinuous, in one step: for data that changed
    /// behind the cache's back key by key, as compaction's purge changes
    /// it (see the crate documentation). Call it after the change is
    /// visible to the underlying source: a population that read the
    /// source before this call is refused.
    pub fn invalidate_keys(&self, keys: &[DecoratedKey]) {
        let shared = &*self.shared;
        let c = shared.id;
        let doomed = {
            let mut idx = shared.index().lock();
            idx.cache_mut(c).phase += 1;
            let mut doomed = Vec::new();
            for key in keys {
                doomed.extend(idx.invalidate_key(c, key));
            }
            doomed
        };
        shared.tracker.free(doomed);
    }

    /// Evicts up to `n` of this cache's least recently used partitions
    /// (or tails of wide ones), as logalloc's eviction does; returns how
    /// many went. ([`CacheTracker::evict`] evicts from every cache of the
    /// tracker, in LRU order.)
    pub fn evict(&self, n: usize) -> usize {
        let shared = &*self.shared;
        let mut done = 0;
        while done < n {
            let Some(handles) = shared.index().lock().evict_oldest_of(shared.id) else {
                break;
            };
            shared.tracker.free(handles);
            done += 1;
        }
        done
    }

    /// Evicts everything of this cache and forgets all its continuity.
    pub fn clear(&self) {
        let shared = &*self.shared;
        let c = shared.id;
        let doomed = {
            let mut idx = shared.index().lock();
            idx.cache_mut(c).phase += 1;
            idx.invalidate_range(c, Point::Min, Point::Max)
        };
        shared.tracker.free(doomed);
    }

    /// The id of the tracker's region (shared by every cache of the
    /// tracker), to recognise it in a listener.
    pub fn region_id(&self) -> RegionId {
        self.shared.tracker.region.read().id()
    }

    /// Reports the tracker's region's memory to `listener`: see
    /// [`CacheTracker::listen`] (the region is every cache's of the
    /// tracker).
    pub fn listen(&self, listener: PlainArc<dyn RegionListener>) {
        self.shared.tracker.region.write().listen(listener);
    }

    /// A snapshot of this cache's counters and sizes (its own partitions
    /// and bytes; the region's figures are the tracker's, shared by every
    /// cache of it).
    pub fn stats(&self) -> CacheStats {
        let shared = &*self.shared;
        let sizes = {
            let idx = shared.index().lock();
            let c = idx.cache(shared.id);
            Sizes {
                partitions: c.len(),
                stored_bytes: c.stored_bytes,
                continuous_ranges: c.continuity.len(),
                evictions: c.evictions,
            }
        };
        let region = shared.tracker.region.read().stats();
        shared.counters.snapshot(sizes, region)
    }

    /// Recounts the tracker's index (this cache's and every other cache's
    /// part: they share the region) and checks that the region holds
    /// exactly the entries' objects (for tests; call it with no operation
    /// running).
    ///
    /// # Errors
    /// A description of the first inconsistency.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.tracker().check_invariants()
    }
}
