//! Helpers shared by the integration tests.
#![allow(
    dead_code,
    unreachable_pub,
    reason = "each test binary uses a different subset of the helpers"
)]

pub mod source;

use std::sync::Arc;

use logalloc::{PoolConfig, SegmentPool};
use mutation::{ClusteringRange, FragmentReader, Mutation, PartitionRange, to_mutations};
use row_cache::{CacheConfig, RowCache, UpdateStats};

pub use source::MemorySource;

/// See [`source::restrict`].
pub fn restrict(m: &Mutation, slice: &ClusteringRange) -> Mutation {
    source::restrict(m, slice)
}

/// A pool of `limit` bytes in 64 KiB segments.
pub fn pool(limit: usize) -> Arc<SegmentPool> {
    SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(64 << 10)
            .with_memory_limit(limit),
    )
    .expect("pool")
}

/// A pool, a source and a cache in front of it.
pub fn setup(limit: usize) -> (Arc<SegmentPool>, Arc<MemorySource>, RowCache) {
    setup_with(limit, CacheConfig::default())
}

/// [`setup`] with a cache configuration.
pub fn setup_with(
    limit: usize,
    config: CacheConfig,
) -> (Arc<SegmentPool>, Arc<MemorySource>, RowCache) {
    let pool = pool(limit);
    let source = Arc::new(MemorySource::new());
    let cache = RowCache::new(&pool, source.clone(), config).expect("cache");
    (pool, source, cache)
}

/// Everything a reader yields, validated and collected.
pub fn read_all(reader: &mut dyn FragmentReader) -> Vec<Mutation> {
    to_mutations(reader).expect("a valid stream")
}

/// A read of `range` through the cache.
pub fn read(cache: &RowCache, range: PartitionRange, slice: ClusteringRange) -> Vec<Mutation> {
    read_all(&mut cache.make_reader(range, slice))
}

/// What a flush does: the sstable is committed (the source sees `m`),
/// then the cache is updated from the flushed data.
pub fn flush(cache: &RowCache, source: &MemorySource, batch: &[Mutation]) {
    for m in batch {
        source.apply(m);
    }
    let mut flushed = mutation::from_mutations(batch.to_vec());
    cache.update_from(&mut flushed).expect("update");
}

/// A memtable in `pool` (in a region group of its own) holding `batch`,
/// sealed, as a flush leaves it.
pub fn sealed_memtable(pool: &Arc<SegmentPool>, batch: &[Mutation]) -> Arc<memtable::Memtable> {
    let group = region_group::RegionGroup::new("memtables", region_group::ReclaimConfig::default());
    let memtable = memtable::Memtable::new(&group, pool).expect("memtable");
    for m in batch {
        memtable.apply(m).expect("apply");
    }
    memtable.seal();
    memtable
}

/// [`flush`] by a region merge: the batch is written to a memtable of the
/// cache's pool, the source sees it (the sstable is committed), then the
/// memtable's region is merged into the cache's
/// (`RowCache::update_by_merge`).
pub fn flush_by_merge(
    pool: &Arc<SegmentPool>,
    cache: &RowCache,
    source: &MemorySource,
    batch: &[Mutation],
) -> UpdateStats {
    let memtable = sealed_memtable(pool, batch);
    for m in batch {
        source.apply(m);
    }
    cache
        .update_by_merge(&memtable, &mut || {})
        .expect("update")
        .expect("no reader of the memtable is open")
}
