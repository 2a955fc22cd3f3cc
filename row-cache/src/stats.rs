//! Counters and the statistics snapshots.

use logalloc::RegionStats;
use sync::plain::{AtomicU64, Ordering};

/// Event counters. Plain `std` atomics in every build: they order nothing
/// between threads (see `sync::plain`).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) hits: AtomicU64,
    pub(crate) misses: AtomicU64,
    pub(crate) populations: AtomicU64,
    pub(crate) population_refusals: AtomicU64,
    pub(crate) population_failures: AtomicU64,
    pub(crate) update_merged: AtomicU64,
    pub(crate) update_inserted: AtomicU64,
    pub(crate) update_invalidated: AtomicU64,
    pub(crate) update_bytes: AtomicU64,
    pub(crate) update_adopted: AtomicU64,
}

impl Counters {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self, sizes: Sizes, region: RegionStats) -> CacheStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        CacheStats {
            hits: get(&self.hits),
            misses: get(&self.misses),
            populations: get(&self.populations),
            population_refusals: get(&self.population_refusals),
            population_failures: get(&self.population_failures),
            evictions: sizes.evictions,
            update_merged: get(&self.update_merged),
            update_inserted: get(&self.update_inserted),
            update_invalidated: get(&self.update_invalidated),
            update_bytes: get(&self.update_bytes),
            update_adopted: get(&self.update_adopted),
            partitions: sizes.partitions,
            stored_bytes: sizes.stored_bytes,
            continuous_ranges: sizes.continuous_ranges,
            region,
        }
    }
}

/// What a cache's part of the index says of it (read under the index
/// lock).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sizes {
    pub(crate) partitions: usize,
    pub(crate) stored_bytes: usize,
    pub(crate) continuous_ranges: usize,
    pub(crate) evictions: u64,
}

/// A snapshot of a cache's activity and size.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct CacheStats {
    /// Partitions (and known-empty answers) served from the cache.
    pub hits: u64,
    /// Partitions or gaps that had to be read from the underlying source.
    pub misses: u64,
    /// Reads whose result entered the cache.
    pub populations: u64,
    /// Populations refused because an update at flush (or an
    /// invalidation) began after their read opened the source.
    pub population_refusals: u64,
    /// Populations dropped because the pool had no memory for them.
    pub population_failures: u64,
    /// This cache's partitions (or tails of wide ones) evicted, by
    /// logalloc's reclaim, the tracker's budget (whichever cache's
    /// population or update pushed the total over it),
    /// [`RowCache::evict`](crate::RowCache::evict) or
    /// [`CacheTracker::evict`](crate::CacheTracker::evict).
    pub evictions: u64,
    /// Flushed partitions merged into cached ones.
    pub update_merged: u64,
    /// Flushed partitions inserted into continuous ranges.
    pub update_inserted: u64,
    /// Flushed partitions that could not be stored, so their neighbourhood
    /// was made discontinuous.
    pub update_invalidated: u64,
    /// Bytes copied into the cache by updates at flush.
    pub update_bytes: u64,
    /// Of the inserted partitions, those adopted where they lay by
    /// [`RowCache::update_by_merge`](crate::RowCache::update_by_merge)
    /// (their bytes are not in `update_bytes`: none were written).
    pub update_adopted: u64,
    /// This cache's partitions now.
    pub partitions: usize,
    /// Bytes of this cache's encoded partitions now (its part of what the
    /// tracker's budget counts).
    pub stored_bytes: usize,
    /// Continuous ranges this cache knows now.
    pub continuous_ranges: usize,
    /// The memory of the tracker's region, which holds every cache of the
    /// tracker (the same figure in each of them).
    pub region: RegionStats,
}

/// A snapshot of a [`CacheTracker`](crate::CacheTracker)'s totals.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct TrackerStats {
    /// Caches in the tracker now.
    pub caches: usize,
    /// Partitions of every cache now.
    pub partitions: usize,
    /// Bytes of encoded partitions of every cache now (what the budget
    /// bounds).
    pub stored_bytes: usize,
    /// Evictions from every cache (caches dropped since included).
    pub evictions: u64,
    /// The budget of all the caches together, if any.
    pub max_bytes: Option<usize>,
    /// The region's memory (every cache's partitions).
    pub region: RegionStats,
}

impl CacheStats {
    /// `hits / (hits + misses)`, or 0 before any read.
    pub fn hit_ratio(&self) -> f64 {
        let total = self.hits + self.misses;
        if total == 0 {
            0.0
        } else {
            self.hits as f64 / total as f64
        }
    }
}

/// What one [`RowCache::update_from`](crate::RowCache::update_from) or
/// [`RowCache::update_by_merge`](crate::RowCache::update_by_merge) did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct UpdateStats {
    /// Flushed partitions seen (taken or skipped).
    pub partitions: usize,
    /// Of those, partitions the cache holds nothing of and knows nothing
    /// around (neither cached nor in a continuous range): skipped without
    /// reading their rows.
    pub skipped: usize,
    /// Merged into cached partitions.
    pub merged: usize,
    /// Inserted where the ring was continuous.
    pub inserted: usize,
    /// Not storable: invalidated instead.
    pub invalidated: usize,
    /// Bytes written into the cache's region.
    pub bytes_copied: usize,
    /// Of the inserted partitions, those adopted where they lay by
    /// [`RowCache::update_by_merge`](crate::RowCache::update_by_merge):
    /// their objects changed owner, no byte was written.
    pub adopted: usize,
    /// The bytes of the adopted partitions' objects.
    pub bytes_adopted: usize,
}
