//! A read-through row cache in front of a slow source, sharing a small
//! logalloc pool with other data: hot partitions are served from memory,
//! a scan makes a range continuous so absent keys are answered without a
//! reader, an update at "flush" merges new data in, and when another
//! region of the pool needs the memory, logalloc evicts the cache's least
//! recently used partitions instead of failing.
//!
//! ```sh
//! cargo run --example read_through_cache -p replmem-row-cache
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use logalloc::{PoolConfig, Region, SegmentPool};
use mutation::{
    Cell, ClusteringRange, DecoratedKey, FragmentReader, Mutation, PartitionRange, Timestamp,
    from_mutations, to_mutations,
};
use row_cache::{CacheConfig, RowCache, UnderlyingSource};

/// The data behind the cache (a replica's is its sstables), counting reads.
struct Source {
    data: Vec<Mutation>,
    reads: AtomicU64,
}

impl UnderlyingSource for Source {
    fn make_reader(
        &self,
        range: PartitionRange,
        _slice: ClusteringRange,
    ) -> Result<Box<dyn FragmentReader + Send>, mutation::Error> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        let hits: Vec<Mutation> = self
            .data
            .iter()
            .filter(|m| range.contains(m.key()))
            .cloned()
            .collect();
        Ok(Box::new(from_mutations(hits)))
    }
}

fn key(k: u32) -> DecoratedKey {
    DecoratedKey::from_bytes(format!("user:{k:05}")).expect("a short key")
}

fn row(k: u32, value: &str, ts: i64) -> Mutation {
    Mutation::builder(key(k))
        .cell(
            "profile",
            0,
            Cell::live(value.to_owned(), Timestamp::from_micros(ts)),
        )
        .build()
        .expect("a small mutation")
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let pool = SegmentPool::new(
        PoolConfig::default()
            .with_segment_size(64 << 10)
            .with_memory_limit(4 << 20),
    )?;
    let mut data: Vec<Mutation> = (0..2000).map(|k| row(k, &"x".repeat(400), 1)).collect();
    data.sort_by(|a, b| a.key().cmp(b.key()));
    let source = Arc::new(Source {
        data,
        reads: AtomicU64::new(0),
    });
    let cache = RowCache::new(
        &pool,
        Arc::clone(&source) as Arc<dyn UnderlyingSource>,
        CacheConfig::default(),
    )?;

    // A hot set of 50 partitions, read 20 times each: 50 misses, then hits.
    for _ in 0..20 {
        for k in 0..50 {
            let mut r =
                cache.make_reader(PartitionRange::single_key(key(k)), ClusteringRange::full());
            assert_eq!(to_mutations(&mut r)?.len(), 1);
        }
    }
    let s = cache.stats();
    println!(
        "hot set: {} hits, {} misses (hit ratio {:.2}), {} source reads",
        s.hits,
        s.misses,
        s.hit_ratio(),
        source.reads.load(Ordering::Relaxed)
    );
    assert_eq!(s.misses, 50);

    // A full scan populates everything and makes the ring continuous: a key
    // that is not in the source is then answered with no reader at all.
    let mut scan = cache.make_reader(PartitionRange::full(), ClusteringRange::full());
    assert_eq!(to_mutations(&mut scan)?.len(), 2000);
    drop(scan);
    let reads = source.reads.load(Ordering::Relaxed);
    assert!(
        cache
            .make_reader_opt(
                PartitionRange::single_key(key(99_999)),
                ClusteringRange::full()
            )
            .is_none()
    );
    assert_eq!(
        source.reads.load(Ordering::Relaxed),
        reads,
        "the absent key touched no source"
    );
    println!(
        "after a scan: {} partitions, {} bytes cached; an absent key needs no reader",
        cache.stats().partitions,
        cache.stats().stored_bytes
    );

    // A flushed memtable's data enters the cache (merged into the cached
    // partition), so the next read sees it without the source.
    let mut flushed = from_mutations(vec![row(7, "new", 2)]);
    cache.update_from(&mut flushed)?;
    let mut r = cache.make_reader(PartitionRange::single_key(key(7)), ClusteringRange::full());
    assert_eq!(to_mutations(&mut r)?, vec![row(7, "new", 2)]);
    drop(r);
    println!("update at flush: key 7 reads its new value from the cache");

    // Another region of the same pool (a memtable's, say) needs memory the
    // cache holds: logalloc calls the cache's eviction hook.
    let before = cache.stats().partitions;
    let mut other = Region::new(&pool);
    let mut held = Vec::new();
    for _ in 0..3200 {
        held.push(other.alloc_bytes(&[0u8; 1024])?);
    }
    let after = cache.stats();
    println!(
        "another region took {} KiB of the 4 MiB pool: the cache evicted {} partitions ({} left), no allocation failed",
        held.len(),
        after.evictions,
        after.partitions
    );
    assert!(after.partitions < before && after.evictions > 0);
    // Evicted partitions are read through again.
    let mut r = cache.make_reader(
        PartitionRange::single_key(key(1999)),
        ClusteringRange::full(),
    );
    assert_eq!(to_mutations(&mut r)?.len(), 1);
    Ok(())
}
