//! The row cache at replica level, each benchmark against its baseline in
//! the same run:
//!
//! * `point_reads`: single-partition reads (`Database::get`) of a working
//!   set that fits the cache, every partition flushed to sstables: cache
//!   on (warm) against off (the sstables read on every get);
//! * `single_partition`: the seed's shape (ScyllaDB's `perf_simple_query`
//!   with the cache on): reads of partitions that are only in the cache or
//!   only in a memtable, with `make_reader_opt` on every source (the
//!   normal `get`) against building a reader of every source
//!   (`get_building_every_reader`); and, for scale, of keys in no source.
//!
//! * `contended_misses`: reads of keys no source holds, from several
//!   threads at once: cache on in a new table (its cache started
//!   continuous: every miss answered by the index), cache on in a reopened
//!   table (misses read the sstables and populate the keys' absence),
//!   cache off.
//!
//! Allocations per read are counted by a counting global allocator and
//! printed once per benchmark (`allocs/op`), outside the timed loops.
//!
//! `cargo bench -p replmem-replica --bench cache` (add `-- --test` for one quick
//! pass).

use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};

use criterion::Criterion;
use mutation::{Cell, ClusteringRange, DecoratedKey, Mutation, PartitionRange, Timestamp};
use replica::{CacheSize, CommitLogMode, Database, DatabaseConfig, TableSchema};

#[global_allocator]
static GLOBAL: test_support::CountingAllocator = test_support::CountingAllocator;

/// Partitions of the working set (about 1 MiB of values: it fits).
const PARTITIONS: usize = 2_000;
const ROWS: usize = 5;

fn key(i: usize) -> DecoratedKey {
    DecoratedKey::from_bytes(format!("pk{i:06}")).unwrap()
}

fn partition(i: usize) -> Mutation {
    let mut b = Mutation::builder(key(i));
    for r in 0..ROWS {
        b = b.cell(
            format!("ck{r:03}"),
            0,
            Cell::live(vec![r as u8; 100], Timestamp::from_micros(1)),
        );
    }
    b.build().unwrap()
}

fn open(dir: &std::path::Path, cache: CacheSize) -> Database {
    let mut config = DatabaseConfig::new(dir);
    config.commitlog = CommitLogMode::Off;
    config.dirty_memory_budget = 64 << 20;
    config.cache_size = cache;
    let db = Database::open(config).unwrap();
    db.create_table(TableSchema::new("t").unwrap()).unwrap();
    db
}

/// Allocations per call of `f(0..ops)`, after one uncounted pass over the
/// same calls: a key's first clone allocates (`bytes::Bytes` turns a
/// buffer built from a `Vec` into a shared one), a one-time cost that
/// would otherwise land on whichever variant runs first.
fn allocs_per_op(label: &str, ops: usize, mut f: impl FnMut(usize)) {
    for i in 0..ops {
        f(i);
    }
    let before = test_support::allocations();
    for i in 0..ops {
        f(i);
    }
    let n = test_support::allocations() - before;
    eprintln!("{label}: {:.1} allocs/op", n as f64 / ops as f64);
}

fn get(db: &Database, k: &DecoratedKey) -> usize {
    let m = db.get("t", k, ClusteringRange::full()).unwrap();
    black_box(m.map_or(0, |m| m.rows().len()))
}

fn point_reads(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let dbs: Vec<(&str, Database)> = [("cache_on", CacheSize::Auto), ("cache_off", CacheSize::Off)]
        .into_iter()
        .map(|(name, cache)| {
            let db = open(&dir.path().join(name), cache);
            for i in 0..PARTITIONS {
                db.apply("t", &partition(i)).unwrap();
            }
            db.flush("t").unwrap();
            // Warm: every partition read once (a miss that populates).
            for i in 0..PARTITIONS {
                assert_eq!(get(&db, &key(i)), ROWS);
            }
            (name, db)
        })
        .collect();
    let keys: Vec<DecoratedKey> = (0..PARTITIONS).map(key).collect();
    for (name, db) in &dbs {
        allocs_per_op(&format!("point_reads/{name}"), 1000, |i| {
            get(db, &keys[i * 7 % keys.len()]);
        });
    }
    let mut g = c.benchmark_group("point_reads");
    g.throughput(criterion::Throughput::Elements(1));
    for (name, db) in &dbs {
        let mut i = 0;
        g.bench_function(*name, |b| {
            b.iter(|| {
                i = (i + 7) % keys.len();
                get(db, &keys[i])
            })
        });
    }
    g.finish();
    let m = dbs[0].1.metrics().cache;
    eprintln!(
        "point_reads/cache_on: hit ratio {:.3} ({} hits, {} misses)",
        m.hit_ratio(),
        m.hits,
        m.misses
    );
    for (_, db) in dbs {
        db.close().unwrap();
    }
}

fn single_partition(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), CacheSize::Auto);
    // The whole ring known to the cache (the table is empty), so the
    // flush brings the first half into it.
    let mut scan = db.scan("t", PartitionRange::full()).unwrap();
    assert!(mutation::to_mutations(&mut scan).unwrap().is_empty());
    for i in 0..PARTITIONS {
        db.apply("t", &partition(i)).unwrap();
    }
    db.flush("t").unwrap();
    // The second half stays in the memtable.
    for i in PARTITIONS..2 * PARTITIONS {
        db.apply("t", &partition(i)).unwrap();
    }
    let cached: Vec<DecoratedKey> = (0..PARTITIONS).map(key).collect();
    let in_memtable: Vec<DecoratedKey> = (PARTITIONS..2 * PARTITIONS).map(key).collect();
    type Read = fn(&Database, &DecoratedKey) -> usize;
    let opt: Read = get;
    let always: Read = |db, k| {
        let m = db
            .get_building_every_reader("t", k, ClusteringRange::full())
            .unwrap();
        black_box(m.map_or(0, |m| m.rows().len()))
    };
    // Keys in no source (the cache knows the ring): what `make_reader_opt`
    // saves on both sources at once.
    let absent: Vec<DecoratedKey> = (0..PARTITIONS).map(|i| key(10 * PARTITIONS + i)).collect();
    let cases: [(&str, &[DecoratedKey], usize); 3] = [
        ("only_in_cache", &cached, ROWS),
        ("only_in_memtable", &in_memtable, ROWS),
        ("absent", &absent, 0),
    ];
    for (where_, keys, rows) in cases {
        for (how, read) in [("make_reader_opt", opt), ("make_reader", always)] {
            allocs_per_op(&format!("single_partition/{where_}/{how}"), 1000, |i| {
                assert_eq!(read(&db, &keys[i * 7 % keys.len()]), rows);
            });
        }
    }
    let before = db.metrics().cache;
    for (where_, keys, _) in cases {
        let mut g = c.benchmark_group(format!("single_partition/{where_}"));
        g.throughput(criterion::Throughput::Elements(1));
        for (how, read) in [("make_reader_opt", opt), ("make_reader", always)] {
            let mut i = 0;
            g.bench_function(how, |b| {
                b.iter(|| {
                    i = (i + 7) % keys.len();
                    read(&db, &keys[i])
                })
            });
        }
        g.finish();
    }
    let after = db.metrics().cache;
    assert_eq!(
        after.misses, before.misses,
        "every read was answered by the cache or the memtable"
    );
    db.close().unwrap();
}

/// Threads of the `contended_misses` group.
const THREADS: usize = 4;

fn contended_misses(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let fill = |db: &Database| {
        for i in 0..PARTITIONS {
            db.apply("t", &partition(i)).unwrap();
        }
        db.flush("t").unwrap();
    };
    let new_on = open(&dir.path().join("new_on"), CacheSize::Auto);
    fill(&new_on);
    // Reopened: the cache starts with nothing known, the sstables hold
    // the data.
    let reopened_dir = dir.path().join("reopened_on");
    let first = open(&reopened_dir, CacheSize::Auto);
    fill(&first);
    first.close().unwrap();
    let mut config = DatabaseConfig::new(&reopened_dir);
    config.commitlog = CommitLogMode::Off;
    config.dirty_memory_budget = 64 << 20;
    config.cache_size = CacheSize::Auto;
    let reopened = Database::open(config).unwrap();
    let off = open(&dir.path().join("off"), CacheSize::Off);
    fill(&off);
    let dbs = [
        ("cache_on_new_table", &new_on),
        ("cache_on_reopened", &reopened),
        ("cache_off", &off),
    ];
    let absent: Vec<DecoratedKey> = (0..100_000).map(|i| key(20 * PARTITIONS + i)).collect();
    let mut g = c.benchmark_group("contended_misses");
    g.throughput(criterion::Throughput::Elements(1));
    for (name, db) in dbs {
        let next = AtomicUsize::new(0);
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let per_thread = iters.div_ceil(THREADS as u64);
                let start = std::time::Instant::now();
                std::thread::scope(|s| {
                    for _ in 0..THREADS {
                        s.spawn(|| {
                            for _ in 0..per_thread {
                                let i = next.fetch_add(1, Ordering::Relaxed) % absent.len();
                                assert_eq!(get(db, &absent[i]), 0);
                            }
                        });
                    }
                });
                // The time per read of one thread's share, as criterion
                // divides by `iters`.
                start
                    .elapsed()
                    .mul_f64(iters as f64 / (per_thread * THREADS as u64) as f64)
            })
        });
    }
    g.finish();
    for (name, db) in dbs {
        let m = db.metrics().cache;
        eprintln!(
            "contended_misses/{name}: hit ratio {:.3} ({} hits, {} misses)",
            m.hit_ratio(),
            m.hits,
            m.misses
        );
    }
    for db in [new_on, reopened, off] {
        db.close().unwrap();
    }
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    point_reads(&mut c);
    single_partition(&mut c);
    contended_misses(&mut c);
    c.final_summary();
}
