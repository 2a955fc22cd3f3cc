//! One wide partition, eight times the dirty budget, written in rows of
//! 1 KiB and then (another table) of 64 KiB, each row its own mutation,
//! then flushed, compacted and read back by slices:
//!
//! * the pool never exceeds its limit and dirty memory never its budget
//!   (plus a segment per memtable): the partition goes out a part at a
//!   time, in several flushes;
//! * the heap outside the pool (every allocation but the pool's segment
//!   chunks, counted by `test_support`'s allocator) grows by at most
//!   [`OUTSIDE_POOL`], a small part of the partition, while it is written
//!   and flushed, compacted into one sstable, and read by slices: flush,
//!   compaction and reads stream it, nothing holds it whole;
//! * slices from its head to its tail read back exactly what was written.
//!
//! The database runs without a row cache: with one, reads by slices of a
//! partition larger than the cache re-read the partition over the hull of
//! the slices read so far, so the heap outside the pool and the time per
//! read grow with the partition (issue 39's report of this test).
//!
//! The partition is 16 MiB by default, so the test runs in seconds in a
//! debug build; `WIDE_PARTITION_MIB=1024` gives issue 39's 1 GiB partition
//! with the same budget and checks (about 10 minutes in a debug build; the
//! values compress, so the sstables take little disk).

use std::ops::{Bound, Range};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{Duration, Instant};

use mutation::{Cell, ClusteringKey, ClusteringRange, DecoratedKey, Mutation, Timestamp};
use replica::{CacheSize, Database, DatabaseConfig, TableSchema};

#[global_allocator]
static GLOBAL: test_support::CountingAllocator = test_support::CountingAllocator;

const MIB: usize = 1 << 20;
/// The user tables' dirty-memory budget.
const BUDGET: usize = 2 * MIB;
/// The pool's segment size (logalloc's default).
const SEGMENT: usize = 128 << 10;
/// The most heap outside the pool that the partition's write and flush,
/// compaction or reads may add to what the open database held before.
/// Measured in a debug build with 1 KiB rows, for partitions of 16 MiB,
/// 48 MiB and 1 GiB: writing and flushing +8.7, +9.7 and +20 to +22 MiB
/// (at the small sizes mostly the commit log's buffers); compacting +4.8,
/// +6.1 and +20 to +25 MiB; reading slices +2.2, +2.3 and +9.0 MiB (two
/// runs at 1 GiB; 64 KiB rows at 1 GiB: +15.7, +12.1, +8.1). Far below the
/// partition, but not flat between 48 MiB and 1 GiB: not yet accounted
/// for (candidates: the partition's clustering-block index, which an
/// sstable writer keeps while writing it and a sliced read decodes, capped
/// at 8 MiB encoded; the state of the hundreds of sstables the flushes of
/// a partition 500 times the budget leave to compaction). The sampler may
/// also catch a pool chunk (4 MiB) taken but not yet counted in
/// `pool_system_bytes`.
const OUTSIDE_POOL: i64 = 32 << 20;
/// Rows per slice read.
const SLICE_ROWS: usize = 64;
/// Slices read, spread evenly from the partition's head to its tail.
const SLICES: usize = 32;

/// The partition's size in bytes of values: `WIDE_PARTITION_MIB`, else 16.
fn partition_bytes() -> usize {
    std::env::var("WIDE_PARTITION_MIB")
        .ok()
        .map(|v| v.parse::<usize>().expect("WIDE_PARTITION_MIB is a number"))
        .unwrap_or(16)
        * MIB
}

fn ck(i: usize) -> ClusteringKey {
    ClusteringKey::new(format!("r{i:08}").into_bytes()).unwrap()
}

/// Row `i`'s value: its number, then a byte that varies with it.
fn value(i: usize, row: usize) -> Vec<u8> {
    let mut v = vec![(i % 251) as u8; row];
    v[..8].copy_from_slice(&(i as u64).to_le_bytes());
    v
}

/// The partition's rows `rows`, as written.
fn rows(key: &DecoratedKey, rows: Range<usize>, row: usize) -> Mutation {
    let mut b = Mutation::builder(key.clone());
    for i in rows {
        b = b.cell(
            ck(i).as_bytes().to_vec(),
            0,
            Cell::live(value(i, row), Timestamp::from_micros(1)),
        );
    }
    b.build().unwrap()
}

fn slice(rows: Range<usize>) -> ClusteringRange {
    ClusteringRange::new(
        Bound::Included(ck(rows.start)),
        Bound::Excluded(ck(rows.end)),
    )
    .unwrap()
}

/// Heap bytes outside the pool: every live allocation less the pool's
/// segment chunks (which come from the same allocator).
fn outside_pool(db: &Database) -> i64 {
    test_support::live_bytes() - db.metrics().pool_system_bytes as i64
}

/// Runs `f` while a thread samples [`outside_pool`] every millisecond;
/// returns the highest sample (the state after `f` included).
fn peak_outside_pool(db: &Arc<Database>, f: impl FnOnce()) -> i64 {
    let stop = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicI64::new(outside_pool(db)));
    let sampler = {
        let (db, stop, peak) = (db.clone(), stop.clone(), peak.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                peak.fetch_max(outside_pool(&db), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    f();
    stop.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    peak.fetch_max(outside_pool(db), Ordering::Relaxed);
    peak.load(Ordering::Relaxed)
}

/// Writes, flushes, compacts and reads one wide partition of `row`-byte
/// rows in `table`, checking the budget, the heap outside the pool and
/// the data.
fn wide_partition(db: &Arc<Database>, table: &str, row: usize) {
    db.create_table(TableSchema::new(table).unwrap()).unwrap();
    let key = DecoratedKey::from_bytes(format!("wide-{table}")).unwrap();
    let count = partition_bytes() / row;
    let limit = db.metrics().pool_limit;
    let baseline = outside_pool(db);
    let mut peaks = Vec::new();

    let started = Instant::now();
    let peak = peak_outside_pool(db, || {
        for i in 0..count {
            db.apply(table, &rows(&key, i..i + 1, row)).unwrap();
            if i % 256 == 0 {
                let used = db.metrics().pool_used;
                assert!(used <= limit, "the pool holds {used} of {limit} bytes");
            }
        }
        db.flush(table).unwrap();
    });
    peaks.push(("write and flush", peak, started.elapsed()));
    let m = db.metrics();
    let t = m.tables.iter().find(|t| t.name == table).unwrap();
    assert!(
        t.flushes >= (partition_bytes() / BUDGET / 2) as u64,
        "the partition went out in {} flushes",
        t.flushes
    );
    // The bound dirty_memory_bound.rs shows: the budget plus a segment
    // per memtable (the one written and the one flushing).
    assert!(
        m.user.peak_real_dirty <= m.user.budget + 2 * SEGMENT,
        "dirty memory peaked at {} over its budget {}",
        m.user.peak_real_dirty,
        m.user.budget
    );
    assert!(t.sstables > 1, "{} sstables", t.sstables);

    let started = Instant::now();
    let peak = peak_outside_pool(db, || db.compact(table).unwrap());
    peaks.push(("compaction", peak, started.elapsed()));
    let m = db.metrics();
    let t = m.tables.iter().find(|t| t.name == table).unwrap();
    assert_eq!(t.sstables, 1, "compaction merged every sstable");

    let started = Instant::now();
    let peak = peak_outside_pool(db, || {
        let step = (count - SLICE_ROWS) / (SLICES - 1);
        for start in (0..SLICES).map(|s| s * step) {
            let end = start + SLICE_ROWS;
            let got = db.get(table, &key, slice(start..end)).unwrap();
            assert_eq!(
                got,
                Some(rows(&key, start..end, row)),
                "rows {start}..{end}"
            );
        }
    });
    peaks.push(("slice reads", peak, started.elapsed()));
    assert!(db.metrics().pool_used <= limit);

    for &(what, peak, took) in &peaks {
        println!(
            "{table}: {what} ({took:.1?}): heap outside the pool {:+.1} MiB, {} MiB partition",
            (peak - baseline) as f64 / MIB as f64,
            partition_bytes() / MIB
        );
    }
    for (what, peak, _) in peaks {
        assert!(
            peak - baseline <= OUTSIDE_POOL,
            "{table}: {what} grew the heap outside the pool by {} bytes",
            peak - baseline
        );
    }
}

#[test]
fn a_wide_partition_streams_within_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = DatabaseConfig::new(dir.path());
    config.dirty_memory_budget = BUDGET;
    config.cache_size = CacheSize::Off;
    let db = Arc::new(Database::open(config).unwrap());
    wide_partition(&db, "rows_1k", 1 << 10);
    wide_partition(&db, "rows_64k", 64 << 10);
    Arc::into_inner(db)
        .expect("the samplers are done")
        .close()
        .unwrap();
}
