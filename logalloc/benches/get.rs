//! `get` against a plain slice index: the cost of resolving a handle.
//!
//! 100,000 objects of 32 bytes, read in a random order (the same order for
//! every side), summing one byte of each:
//! * **slice**: `Vec<[u8; 32]>` indexed by position (the baseline);
//! * **Region::get**: one shared lock per object;
//! * **RegionReader::get**: one shared lock for the whole pass.
//!
//! Prints ns per get and the ratio to the slice.
//!
//! `cargo bench -p replmem-logalloc --bench get [-- --quick]` (`--quick`: 1,000
//! objects, one pass, to check that it runs; `--object-headers`: sizes in
//! object headers, the layout of pools too large for sizes in the
//! handle-table entries).

use std::hint::black_box;
use std::time::Instant;

use logalloc::{PoolConfig, Region, SegmentPool};
use rand::SeedableRng;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (objects, passes) = if quick { (1_000, 1) } else { (100_000, 20) };
    let config = PoolConfig::default().with_memory_limit(256 << 20);
    let headers = std::env::args().any(|a| a == "--object-headers");
    let config = if headers {
        config.with_object_headers()
    } else {
        config
    };
    let pool = SegmentPool::new(config).expect("pool");
    let mut region = Region::new(&pool);
    let mut slice = Vec::with_capacity(objects);
    let mut handles = Vec::with_capacity(objects);
    for i in 0..objects {
        let obj = [(i % 251) as u8; 32];
        slice.push(obj);
        handles.push(region.alloc_bytes(&obj).expect("alloc"));
    }
    let mut order: Vec<usize> = (0..objects).collect();
    order.shuffle(&mut SmallRng::seed_from_u64(7));
    let gets = (objects * passes) as f64;

    let time = |f: &mut dyn FnMut() -> u64| {
        let start = Instant::now();
        let mut sum = 0u64;
        for _ in 0..passes {
            sum = sum.wrapping_add(f());
        }
        black_box(sum);
        start.elapsed().as_nanos() as f64 / gets
    };
    let base = time(&mut || {
        order
            .iter()
            .map(|&i| u64::from(black_box(&slice[i])[0]))
            .sum()
    });
    let get = time(&mut || {
        order
            .iter()
            .map(|&i| u64::from(region.get(handles[i]).expect("get")[0]))
            .sum()
    });
    let view = time(&mut || {
        let reader = region.reader();
        order
            .iter()
            .map(|&i| u64::from(reader.get(handles[i]).expect("get")[0]))
            .sum()
    });
    let layout = if headers {
        ", sizes in object headers"
    } else {
        ""
    };
    println!("get: {objects} objects x {passes} passes, random order{layout}");
    println!("  slice index        {base:8.2} ns/get  1.00x");
    println!("  Region::get        {get:8.2} ns/get  {:.2}x", get / base);
    println!(
        "  RegionReader::get  {view:8.2} ns/get  {:.2}x",
        view / base
    );
}
