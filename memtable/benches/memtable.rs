//! The memtable against in-heap baselines, each comparison in one run.
//!
//! 1. **Inserts and overwrites.** `N` rows (default 1,000,000) with 16-byte
//!    random keys and 100-byte values, then every key overwritten with a
//!    200-byte value, into (a) a memtable (one `Mutation` per row, built in
//!    the loop: it is the memtable's API), (b) `crossbeam_skiplist::SkipMap<Bytes, Bytes>`,
//!    (c) `BTreeMap<Bytes, Bytes>`. Each side runs in its own child process;
//!    it reports inserts/s for both phases and the growth of its resident
//!    set (VmRSS) per live byte (key + value bytes) after the overwrites,
//!    and the ratios of the memtable to each baseline.
//! 2. **Misses.** Single-partition reads of absent keys on a memtable of
//!    `N/10` partitions: `make_reader_opt` (returns `None`) against always
//!    building a reader and reading it to its end
//!    (`make_reader_unchecked`): queries/s and heap allocations per query
//!    (a counting global allocator).
//! 3. **Scans.** Fragments/s of a full scan and of the flush stream over
//!    the same memtable.
//!
//! `cargo bench -p replmem-memtable --bench memtable [-- --quick | --scale F]`:
//! `--quick` runs at 1% scale (10,000 rows), to check that it works;
//! `--scale F` multiplies `N`. Run alone, the memtable side
//! (`--child memtable --n N`) also prints on stderr the region's objects,
//! object bytes, table bytes and segment bytes per row after the
//! overwrites: where its memory goes.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Instant;

use bytes::Bytes;
use crossbeam_skiplist::SkipMap;
use logalloc::{PoolConfig, SegmentPool};
use memtable::Memtable;
use mutation::{
    Cell, ClusteringRange, DecoratedKey, FragmentReader, Mutation, PartitionRange, Timestamp,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use region_group::{ReclaimConfig, RegionGroup};

#[global_allocator]
static GLOBAL: test_support::CountingAllocator = test_support::CountingAllocator;

const KEY: usize = 16;
const SMALL: usize = 100;
const LARGE: usize = 200;

fn rss_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn keys(n: usize) -> Vec<[u8; KEY]> {
    let mut rng = SmallRng::seed_from_u64(0x6b65_7973);
    (0..n).map(|_| rng.r#gen()).collect()
}

fn pool_for(n: usize) -> std::sync::Arc<SegmentPool> {
    // Room for the rows plus the index, with slack for compaction.
    let limit = (n * 1200).max(64 << 20).next_power_of_two();
    SegmentPool::new(PoolConfig::default().with_memory_limit(limit)).expect("pool")
}

fn row(key: &[u8], value: Vec<u8>, ts: i64) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes(key.to_vec()).expect("16-byte key"))
        .cell(
            Bytes::new(),
            0,
            Cell::live(value, Timestamp::from_micros(ts)),
        )
        .build()
        .expect("valid row")
}

/// Runs one side of the insert comparison; prints
/// `insert_seconds overwrite_seconds rss_growth_bytes`.
fn child(side: &str, n: usize) {
    let keys = keys(n);
    let small = vec![0xA5u8; SMALL];
    let large = vec![0x5Au8; LARGE];
    let rss_before = rss_bytes();
    let (insert, overwrite, keep): (f64, f64, Box<dyn std::any::Any>) = match side {
        "memtable" => {
            let pool = pool_for(n);
            let group = RegionGroup::new("bench", ReclaimConfig::default());
            let mt = Memtable::new(&group, &pool).expect("memtable");
            let start = Instant::now();
            for k in &keys {
                mt.apply(&row(k, small.clone(), 1)).expect("apply");
            }
            let insert = start.elapsed().as_secs_f64();
            let start = Instant::now();
            for k in &keys {
                mt.apply(&row(k, large.clone(), 2)).expect("apply");
            }
            let overwrite = start.elapsed().as_secs_f64();
            // Where the memory goes (to stderr: the parent reads stdout).
            let r = mt.stats().region;
            eprintln!(
                "memtable region per row: {:.1} objects, {:.0} object bytes, {:.0} table bytes, {:.0} segment bytes ({} segments)",
                r.objects as f64 / n as f64,
                r.object_bytes as f64 / n as f64,
                r.table_bytes as f64 / n as f64,
                r.total_bytes as f64 / n as f64,
                r.segments
            );
            (insert, overwrite, Box::new((mt, pool)))
        }
        "skipmap" => {
            let map: SkipMap<Bytes, Bytes> = SkipMap::new();
            let start = Instant::now();
            for k in &keys {
                map.insert(Bytes::copy_from_slice(k), Bytes::copy_from_slice(&small));
            }
            let insert = start.elapsed().as_secs_f64();
            let start = Instant::now();
            for k in &keys {
                map.insert(Bytes::copy_from_slice(k), Bytes::copy_from_slice(&large));
            }
            (insert, start.elapsed().as_secs_f64(), Box::new(map))
        }
        "btreemap" => {
            let mut map: BTreeMap<Bytes, Bytes> = BTreeMap::new();
            let start = Instant::now();
            for k in &keys {
                map.insert(Bytes::copy_from_slice(k), Bytes::copy_from_slice(&small));
            }
            let insert = start.elapsed().as_secs_f64();
            let start = Instant::now();
            for k in &keys {
                map.insert(Bytes::copy_from_slice(k), Bytes::copy_from_slice(&large));
            }
            (insert, start.elapsed().as_secs_f64(), Box::new(map))
        }
        other => panic!("unknown side {other}"),
    };
    let growth = rss_bytes().saturating_sub(rss_before);
    drop(keep);
    println!("{insert} {overwrite} {growth}");
}

fn run_child(side: &str, n: usize) -> (f64, f64, usize) {
    let exe = std::env::current_exe().expect("own path");
    let out = Command::new(exe)
        .args(["--child", side, "--n", &n.to_string()])
        .output()
        .expect("child runs");
    assert!(
        out.status.success(),
        "{side}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().expect("a result line");
    let f: Vec<&str> = line.split_whitespace().collect();
    (
        f[0].parse().expect("seconds"),
        f[1].parse().expect("seconds"),
        f[2].parse().expect("bytes"),
    )
}

fn inserts(n: usize) {
    println!(
        "1. {n} inserts of {KEY}-byte keys + {SMALL}-byte values, then overwrites with {LARGE}-byte values"
    );
    let live = (n * (KEY + LARGE)) as f64;
    let sides = ["memtable", "skipmap", "btreemap"];
    let results: Vec<_> = sides.iter().map(|s| run_child(s, n)).collect();
    for (side, (ins, over, rss)) in sides.iter().zip(&results) {
        println!(
            "  {side:9} insert {:>10.0}/s  overwrite {:>10.0}/s  RSS growth {:>6.2} bytes per live byte",
            n as f64 / ins,
            n as f64 / over,
            *rss as f64 / live
        );
    }
    let (mi, mo, mr) = results[0];
    for (side, (ins, over, rss)) in sides.iter().zip(&results).skip(1) {
        println!(
            "  memtable / {side}: insert {:.2}x  overwrite {:.2}x  memory {:.2}x",
            ins / mi,
            over / mo,
            mr as f64 / *rss as f64
        );
    }
}

fn populated(n: usize) -> (std::sync::Arc<Memtable>, std::sync::Arc<SegmentPool>) {
    let pool = pool_for(n);
    let group = RegionGroup::new("bench", ReclaimConfig::default());
    let mt = Memtable::new(&group, &pool).expect("memtable");
    let mut rng = SmallRng::seed_from_u64(3);
    for i in 0..n {
        let mut b =
            Mutation::builder(DecoratedKey::from_bytes(format!("present-{i}")).expect("key"));
        for c in 0..4 {
            let value: Vec<u8> = (0..32).map(|_| rng.r#gen()).collect();
            b = b.cell(
                format!("c{c}"),
                0,
                Cell::live(value, Timestamp::from_micros(1)),
            );
        }
        mt.apply(&b.build().expect("mutation")).expect("apply");
    }
    (mt, pool)
}

fn misses(mt: &std::sync::Arc<Memtable>, queries: usize) {
    println!("2. {queries} single-partition reads that miss");
    let ranges: Vec<PartitionRange> = (0..queries)
        .map(|i| {
            PartitionRange::single_key(
                DecoratedKey::from_bytes(format!("absent-{i}")).expect("key"),
            )
        })
        .collect();
    let slice = ClusteringRange::full();
    let measure = |f: &dyn Fn(&PartitionRange) -> usize| {
        let allocs = test_support::allocations();
        let start = Instant::now();
        let mut found = 0;
        for r in &ranges {
            found += f(r);
        }
        let secs = start.elapsed().as_secs_f64();
        let per_query = (test_support::allocations() - allocs) as f64 / queries as f64;
        assert_eq!(found, 0);
        (queries as f64 / secs, per_query)
    };
    // A warm-up pass of each, then the measured passes.
    for _ in 0..2 {
        measure(&|r| {
            mt.make_reader_opt(r.clone(), slice.clone())
                .expect("reader")
                .map_or(0, |_| 1)
        });
    }
    let opt = measure(&|r| {
        mt.make_reader_opt(r.clone(), slice.clone())
            .expect("reader")
            .map_or(0, |_| 1)
    });
    let always = measure(&|r| {
        let mut reader = mt.make_reader_unchecked(r.clone(), slice.clone());
        let mut n = 0;
        while reader.next().expect("next").is_some() {
            n += 1;
        }
        n
    });
    println!(
        "  make_reader_opt    {:>10.0} queries/s  {:.2} allocations/query",
        opt.0, opt.1
    );
    println!(
        "  always a reader    {:>10.0} queries/s  {:.2} allocations/query",
        always.0, always.1
    );
    println!(
        "  opt / always: {:.2}x queries/s, {:.0}% fewer allocations",
        opt.0 / always.0,
        100.0 * (1.0 - opt.1 / always.1.max(f64::MIN_POSITIVE))
    );
}

fn scans(mt: &std::sync::Arc<Memtable>) {
    println!("3. full scan and flush stream");
    let count = |reader: &mut dyn FragmentReader| {
        let mut n = 0u64;
        while reader.next().expect("next").is_some() {
            n += 1;
        }
        n
    };
    let start = Instant::now();
    let mut scan = mt
        .make_reader(PartitionRange::full(), ClusteringRange::full())
        .expect("reader");
    let n = count(&mut scan);
    let scan_rate = n as f64 / start.elapsed().as_secs_f64();
    let start = Instant::now();
    let mut flush = mt.make_flush_reader(|_| {});
    let f = count(&mut flush);
    let flush_rate = f as f64 / start.elapsed().as_secs_f64();
    println!("  full scan    {n} fragments  {scan_rate:>12.0} fragments/s");
    println!("  flush stream {f} fragments  {flush_rate:>12.0} fragments/s");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    if let Some(side) = value("--child") {
        let n = value("--n").and_then(|n| n.parse().ok()).expect("--n N");
        child(&side, n);
        return;
    }
    let scale: f64 = if args.iter().any(|a| a == "--quick") {
        0.01
    } else {
        value("--scale").and_then(|s| s.parse().ok()).unwrap_or(1.0)
    };
    let n = ((1_000_000.0 * scale) as usize).max(1000);
    inserts(n);
    let (mt, _pool) = populated(n / 10);
    misses(&mt, n / 10);
    scans(&mt);
}
