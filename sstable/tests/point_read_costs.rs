//! What one point read of a settled sstable costs its reader, counted
//! (never timed): file reads (the file layer's `FaultFs` counts every
//! positional read), bytes read (charged to a device), and heap
//! allocations (a counting global allocator), per `read_partition` of a
//! partition the sstable holds, once the sstable has served one read of
//! every partition (a warm reader, as a replica's long-lived sstables are),
//! with the process's cache of Index blocks on and off.
//!
//! Two shapes, the ones issue 35 profiles: partitions of one 8 KiB row and
//! of 8 rows of 1 KiB, values incompressible. The counts are printed
//! (`cargo test -p replmem-sstable --test point_read_costs -- --nocapture`)
//! and pinned.
//!
//! One test in this binary: the allocation counter is process-wide.

use std::path::Path;
use std::sync::Arc;

use fs::{FaultFs, FsHandle, Op, RealFs};
use mutation::{Cell, DecoratedKey, Fragment, FragmentReader, Mutation, Timestamp};
use sstable::{Sstable, Writer, WriterOptions};

#[global_allocator]
static GLOBAL: test_support::CountingAllocator = test_support::CountingAllocator;

/// Partitions in each sstable: several Index blocks and many Data blocks.
const PARTITIONS: u32 = 600;

/// Bytes that do not compress (xorshift).
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn key(i: u32) -> DecoratedKey {
    DecoratedKey::from_bytes(format!("user{i:08}")).unwrap()
}

/// The partitions of one shape: `rows` rows of `row_bytes` each.
fn mutations(rows: u32, row_bytes: usize) -> Vec<Mutation> {
    (0..PARTITIONS)
        .map(|i| {
            let mut b = Mutation::builder(key(i));
            for r in 0..rows {
                b = b.cell(
                    format!("c{r}"),
                    0,
                    Cell::live(
                        noise(u64::from(i) * 8 + u64::from(r), row_bytes),
                        Timestamp::from_micros(1),
                    ),
                );
            }
            b.build().unwrap()
        })
        .collect()
}

/// Per point read, averaged over one read of every partition.
#[derive(Debug)]
struct Costs {
    reads: f64,
    bytes: f64,
    allocations: f64,
    data_blocks: f64,
}

/// Writes the shape on a counting file system, opens it, reads every
/// partition once to warm the reader, then counts a second pass, with
/// `index_cache` bytes of budget for Index blocks.
fn measure(dir: &Path, rows: u32, row_bytes: usize, index_cache: u64) -> Costs {
    sstable::set_index_cache_budget(index_cache);
    let fault = FaultFs::new(Arc::new(RealFs));
    let fs = FsHandle::new(Arc::new(fault.clone()));
    let mut ms = mutations(rows, row_bytes);
    ms.sort_by(|a, b| a.key().cmp(b.key()));
    let expected: Vec<Vec<Fragment>> = ms
        .iter()
        .map(|m| {
            let mut r = mutation::from_mutations(vec![m.clone()]);
            let mut out = Vec::new();
            while let Some(f) = r.next().unwrap() {
                out.push(f);
            }
            out
        })
        .collect();
    let mut options = WriterOptions::default();
    options.fs = fs.clone();
    let mut w = Writer::create(dir, options).unwrap();
    for f in expected.iter().flatten() {
        w.write(f).unwrap();
    }
    let generation = w.commit().unwrap().generation;
    let device = device::Device::new("counting", 1 << 40).unwrap();
    let sst = Sstable::open_with(dir, generation, Some(Arc::clone(&device)), &fs).unwrap();
    for (m, want) in ms.iter().zip(&expected) {
        assert_eq!(sst.read_partition(m.key()).unwrap().as_ref(), Some(want));
    }
    let reads = fault.calls(Op::Read);
    let bytes = device.stats().bytes_read;
    let blocks = sst.data_blocks_read();
    let allocations = test_support::allocations();
    for m in &ms {
        let got = sst.read_partition(m.key()).unwrap();
        assert!(got.is_some());
    }
    let allocations = test_support::allocations() - allocations;
    let n = f64::from(PARTITIONS);
    // Every answer of the measured pass is checked after it.
    for (m, want) in ms.iter().zip(&expected) {
        assert_eq!(sst.read_partition(m.key()).unwrap().as_ref(), Some(want));
    }
    let costs = Costs {
        reads: (fault.calls(Op::Read) - reads) as f64 / 2.0 / n,
        bytes: (device.stats().bytes_read - bytes) as f64 / 2.0 / n,
        allocations: allocations as f64 / n,
        data_blocks: (sst.data_blocks_read() - blocks) as f64 / 2.0 / n,
    };
    let held = sstable::index_cache_bytes();
    if index_cache > 0 {
        // The whole Index is held, and counted: the blocks' payloads and
        // entry offsets.
        let index_size = sst.statistics().index_size;
        assert!(
            held >= index_size / 2 && held <= 3 * index_size,
            "{held} for {index_size}"
        );
    } else {
        assert_eq!(held, 0);
    }
    drop(sst);
    assert_eq!(
        sstable::index_cache_bytes(),
        0,
        "closing gives the bytes back"
    );
    println!(
        "{rows} x {row_bytes} B, index cache {}: {:.2} reads, {:.0} bytes, {:.1} allocations, {:.2} Data blocks per point read",
        if index_cache > 0 { "on" } else { "off" },
        costs.reads,
        costs.bytes,
        costs.allocations,
        costs.data_blocks
    );
    costs
}

#[test]
fn a_warm_point_read_costs_one_read_per_data_block() {
    for (rows, row_bytes) in [(1, 8 << 10), (8, 1 << 10)] {
        // Without the cache: one positional read for the Index block (the
        // Summary tells its length) and one per Data block (the first read
        // takes the sstable's average block and an eighth more).
        let dir = tempfile::tempdir().unwrap();
        let c = measure(dir.path(), rows, row_bytes, 0);
        assert_eq!(c.reads, 1.0 + c.data_blocks, "{c:?}");
        assert_eq!(c.data_blocks, 1.0, "{c:?}");
        // With it, a warm read reads its Data blocks only.
        let dir = tempfile::tempdir().unwrap();
        let c = measure(
            dir.path(),
            rows,
            row_bytes,
            sstable::DEFAULT_INDEX_CACHE_BUDGET,
        );
        // Each partition fits one Data block and its end never opens the
        // next one: one read per point read.
        assert_eq!(c.reads, c.data_blocks, "{c:?}");
        assert_eq!(c.data_blocks, 1.0, "{c:?}");
        // The block's buffer, the partition start's key, the vector of
        // fragments as it grows, and four per row decoded (its clustering
        // key, cells, value...): the index entry takes a clone of the key
        // asked for, and nothing is allocated to find it.
        let most = 5.0 + 4.0 * f64::from(rows);
        assert!(c.allocations <= most, "{c:?}, at most {most}");
    }
}
