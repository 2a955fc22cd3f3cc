//! Row cache benchmarks, each against its baseline in the same run:
//!
//! * `point_reads`: single-partition reads of a working set that fits the
//!   cache, through the warm cache against reading the underlying source
//!   directly (an in-memory source that decodes and checksums each
//!   partition, as an sstable read decodes a block); `cache_opt` is the
//!   same hit through `make_reader_opt`, as the replica reads;
//! * `misses`: single-partition reads of absent keys in a continuous range,
//!   `make_reader_opt` (no reader) against always building, boxing (as a
//!   table's list of sources holds it) and draining a reader;
//! * `update_at_flush`: `update_from` of a flushed batch into a continuous
//!   cache (the copy, when a reader of the memtable is open) and
//!   `update_by_merge` (the memtable's region merged in, its partitions
//!   adopted where they lie) against
//!   the flush's own cost on the same batch: `flush_sstable` writes and
//!   commits it as an sstable (the `sstable` crate's writer, its fsyncs
//!   included, in a temporary directory under the target directory, on
//!   the same disk as a data directory would be), `flush_encode` only
//!   encodes and checksums it. `update_from / flush_sstable` is what the
//!   copy adds to a flush, `update_by_merge / flush_sstable` what the
//!   merge adds;
//! * `point_reads/cache_adopted`: the warm hit of a partition adopted by
//!   a merge (read where it lies), beside `cache_opt` (a partition the
//!   cache stored itself, copied out and decoded).
//!
//! Allocations per read are counted by a counting global allocator and
//! printed once per benchmark (`allocs/op`), outside the timed loops.
//!
//! `cargo bench -p replmem-row-cache --bench row_cache` (add `-- --test` for one
//! quick pass).

#[path = "../tests/common/source.rs"]
mod source;

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BatchSize, Criterion};
use logalloc::{PoolConfig, SegmentPool};
use mutation::{
    Cell, ClusteringRange, DecoratedKey, FragmentReader, Mutation, PartitionRange, Timestamp,
    from_mutations,
};
use row_cache::{CacheConfig, CacheReader, RowCache, UnderlyingSource};
use source::MemorySource;

#[global_allocator]
static GLOBAL: test_support::CountingAllocator = test_support::CountingAllocator;

const PARTITIONS: usize = 2_000;
const ROWS: usize = 5;

fn partition(i: usize) -> Mutation {
    let mut b = Mutation::builder(DecoratedKey::from_bytes(format!("pk{i:06}")).unwrap());
    for r in 0..ROWS {
        b = b.cell(
            format!("ck{r:03}"),
            0,
            Cell::live(vec![r as u8; 100], Timestamp::from_micros(1)),
        );
    }
    b.build().unwrap()
}

fn drain(r: &mut dyn FragmentReader) -> usize {
    let mut n = 0;
    while let Some(f) = r.next().unwrap() {
        black_box(&f);
        n += 1;
    }
    n
}

fn allocs_per_op(label: &str, ops: usize, mut f: impl FnMut(usize)) {
    let before = test_support::allocations();
    for i in 0..ops {
        f(i);
    }
    let n = test_support::allocations() - before;
    eprintln!("{label}: {:.1} allocs/op", n as f64 / ops as f64);
}

fn setup() -> (Arc<MemorySource>, RowCache, Vec<DecoratedKey>) {
    let pool = SegmentPool::new(PoolConfig::default().with_memory_limit(64 << 20)).unwrap();
    let source = Arc::new(MemorySource::new());
    let mut keys = Vec::new();
    for i in 0..PARTITIONS {
        let m = partition(i);
        keys.push(m.key().clone());
        source.apply(&m);
    }
    let cache = RowCache::new(&pool, source.clone(), CacheConfig::default()).unwrap();
    // Warm: one full scan caches everything and makes the ring continuous.
    drain(&mut cache.make_reader(PartitionRange::full(), ClusteringRange::full()));
    (source, cache, keys)
}

/// The same working set brought in by a flush: a memtable of the batch,
/// merged into a new table's (continuous) cache, every partition adopted
/// where it lies.
fn setup_adopted() -> RowCache {
    let pool = SegmentPool::new(PoolConfig::default().with_memory_limit(64 << 20)).unwrap();
    let source = Arc::new(MemorySource::new());
    let batch: Vec<Mutation> = (0..PARTITIONS).map(partition).collect();
    let memtable = sealed(&pool, &batch);
    for m in &batch {
        source.apply(m);
    }
    let cache = RowCache::new(&pool, source, CacheConfig::default().with_continuous(true)).unwrap();
    let stats = cache
        .update_by_merge(&memtable, &mut || {})
        .unwrap()
        .expect("no reader of the memtable");
    assert_eq!(stats.adopted, PARTITIONS);
    cache
}

/// A sealed memtable of `pool` holding `batch`.
fn sealed(pool: &Arc<SegmentPool>, batch: &[Mutation]) -> Arc<memtable::Memtable> {
    let group = region_group::RegionGroup::new("memtables", region_group::ReclaimConfig::default());
    let memtable = memtable::Memtable::new(&group, pool).unwrap();
    for m in batch {
        memtable.apply(m).unwrap();
    }
    memtable.seal();
    memtable
}

fn point_reads(c: &mut Criterion) {
    let (source, cache, keys) = setup();
    let adopted = setup_adopted();
    let ranges: Vec<PartitionRange> = keys
        .iter()
        .cloned()
        .map(PartitionRange::single_key)
        .collect();
    let full = ClusteringRange::full();
    allocs_per_op("point_reads/cache", 1000, |i| {
        let r = ranges[i * 7 % ranges.len()].clone();
        drain(&mut cache.make_reader(r, full.clone()));
    });
    allocs_per_op("point_reads/cache_opt", 1000, |i| {
        let r = ranges[i * 7 % ranges.len()].clone();
        black_box(
            cache
                .make_reader_opt(r, full.clone())
                .map(|mut r| drain(&mut r)),
        );
    });
    allocs_per_op("point_reads/cache_adopted", 1000, |i| {
        let r = ranges[i * 7 % ranges.len()].clone();
        black_box(
            adopted
                .make_reader_opt(r, full.clone())
                .map(|mut r| drain(&mut r)),
        );
    });
    allocs_per_op("point_reads/source", 1000, |i| {
        let r = ranges[i * 7 % ranges.len()].clone();
        drain(&mut *source.make_reader(r, full.clone()).unwrap());
    });
    let mut g = c.benchmark_group("point_reads");
    g.throughput(criterion::Throughput::Elements(1));
    let mut i = 0;
    g.bench_function("cache", |b| {
        b.iter(|| {
            i = (i + 7) % ranges.len();
            drain(&mut cache.make_reader(ranges[i].clone(), full.clone()))
        })
    });
    // As the replica reads: `make_reader_opt`, whose one index lookup
    // also decides the reader's first step.
    g.bench_function("cache_opt", |b| {
        b.iter(|| {
            i = (i + 7) % ranges.len();
            cache
                .make_reader_opt(ranges[i].clone(), full.clone())
                .map(|mut r| drain(&mut r))
        })
    });
    // The same hit of a partition adopted by a flush's region merge
    // (read where it lies, in the memtable's layout).
    g.bench_function("cache_adopted", |b| {
        b.iter(|| {
            i = (i + 7) % ranges.len();
            adopted
                .make_reader_opt(ranges[i].clone(), full.clone())
                .map(|mut r| drain(&mut r))
        })
    });
    g.bench_function("source", |b| {
        b.iter(|| {
            i = (i + 7) % ranges.len();
            drain(&mut *source.make_reader(ranges[i].clone(), full.clone()).unwrap())
        })
    });
    g.finish();
}

/// A reader as a table's merge list holds it (boxed): what "always a
/// reader" costs a caller that combines sources.
fn boxed(r: CacheReader) -> Box<dyn FragmentReader + Send> {
    Box::new(r)
}

fn misses(c: &mut Criterion) {
    let (_source, cache, _keys) = setup();
    let absent: Vec<PartitionRange> = (0..1000)
        .map(|i| {
            PartitionRange::single_key(DecoratedKey::from_bytes(format!("absent{i}")).unwrap())
        })
        .collect();
    let full = ClusteringRange::full();
    allocs_per_op("misses/make_reader_opt", 1000, |i| {
        let r = absent[i].clone();
        black_box(
            cache
                .make_reader_opt(r, full.clone())
                .map(|mut r| drain(&mut r)),
        );
    });
    allocs_per_op("misses/make_reader", 1000, |i| {
        let r = absent[i].clone();
        drain(&mut boxed(cache.make_reader(r, full.clone())));
    });
    let mut g = c.benchmark_group("misses");
    g.throughput(criterion::Throughput::Elements(1));
    let mut i = 0;
    g.bench_function("make_reader_opt", |b| {
        b.iter(|| {
            i = (i + 1) % absent.len();
            cache
                .make_reader_opt(absent[i].clone(), full.clone())
                .map(|mut r| drain(&mut r))
        })
    });
    g.bench_function("make_reader", |b| {
        b.iter(|| {
            i = (i + 1) % absent.len();
            drain(&mut boxed(
                cache.make_reader(absent[i].clone(), full.clone()),
            ))
        })
    });
    g.finish();
}

fn update_at_flush(c: &mut Criterion) {
    const BATCH: usize = 500;
    let batch: Vec<Mutation> = (0..BATCH).map(|i| partition(PARTITIONS + i)).collect();
    let mut g = c.benchmark_group("update_at_flush");
    g.throughput(criterion::Throughput::Elements(BATCH as u64));
    g.bench_function("update_from", |b| {
        b.iter_batched(
            || {
                let pool =
                    SegmentPool::new(PoolConfig::default().with_memory_limit(64 << 20)).unwrap();
                let source = Arc::new(MemorySource::new());
                let cache = RowCache::new(&pool, source, CacheConfig::default()).unwrap();
                // An empty, continuous ring: every flushed partition is inserted.
                drain(&mut cache.make_reader(PartitionRange::full(), ClusteringRange::full()));
                (pool, cache)
            },
            |(_pool, cache)| {
                cache
                    .update_from(&mut from_mutations(batch.clone()))
                    .unwrap()
            },
            BatchSize::LargeInput,
        )
    });
    // The update by region merge: the same batch in a sealed memtable of
    // the cache's pool (built outside the timing, as the flush built it),
    // merged in and adopted.
    g.bench_function("update_by_merge", |b| {
        b.iter_batched(
            || {
                let pool =
                    SegmentPool::new(PoolConfig::default().with_memory_limit(64 << 20)).unwrap();
                let source = Arc::new(MemorySource::new());
                let config = CacheConfig::default().with_continuous(true);
                let cache = RowCache::new(&pool, source, config).unwrap();
                let memtable = sealed(&pool, &batch);
                (pool, cache, memtable)
            },
            |(pool, cache, memtable)| {
                let stats = cache.update_by_merge(&memtable, &mut || {}).unwrap();
                (pool, cache, memtable, stats)
            },
            BatchSize::LargeInput,
        )
    });
    g.bench_function("flush_sstable", |b| {
        b.iter_batched(
            || {
                tempfile::Builder::new()
                    .prefix("row-cache-bench")
                    .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
                    .unwrap()
            },
            |dir| {
                let mut w =
                    sstable::Writer::create(dir.path(), sstable::WriterOptions::default()).unwrap();
                w.write_all(&mut from_mutations(batch.clone())).unwrap();
                black_box(w.commit().unwrap());
                // Removed outside the timing, with the directory.
                dir
            },
            BatchSize::PerIteration,
        )
    });
    g.bench_function("flush_encode", |b| {
        b.iter(|| {
            let mut out = Vec::new();
            for m in batch.clone() {
                m.encode_into(&mut out);
            }
            crc32c::crc32c(&out)
        })
    });
    g.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    point_reads(&mut c);
    misses(&mut c);
    update_at_flush(&mut c);
    c.final_summary();
}
