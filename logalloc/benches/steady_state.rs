//! W1's steady state alone: 670,000 live 100-byte objects (64 MiB), then
//! five times as many operations that each free a random object and
//! allocate a new one holding a copy of 100 bytes. Unlike the
//! fragmentation bench there is no first phase; each allocator runs in its
//! own child process.
//!
//! Three sides, interleaved, `--repeat N` rounds (default 3):
//! * **system**: glibc, `Box<[u8]>` in a vector;
//! * **logalloc, no compaction**: a pool of 1 GiB, prefaulted by allocating
//!   and freeing more objects than the timed loop will append, so the loop
//!   neither compacts nor page-faults: the alloc/free path alone;
//! * **logalloc at live/0.8**: a pool of live/0.8, so allocations reclaim;
//!   `RegionStats::reclaim_time` says how much of the time that took.
//!
//! `cargo bench -p replmem-logalloc --bench steady_state [-- --repeat 3]`
//!
//! It exists to separate the alloc/free path from compaction. Comparing its
//! system line with the fragmentation bench's W1 shows how much glibc's
//! speed moves with the memory layout around an identical loop.

use std::process::Command;
use std::time::Instant;

use logalloc::{PoolConfig, Region, SegmentPool};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const LIVE: usize = 670_000;
const SIZE: usize = 100;
const OPERATIONS: usize = 5 * LIVE;

/// Runs one side in this process; prints `ns_per_op reclaim_ns_per_op`.
fn child(side: &str) {
    let data = [0xA5u8; SIZE];
    let mut rng = SmallRng::seed_from_u64(0x5eed);
    let (seconds, reclaim) = if side == "system" {
        let mut live: Vec<Box<[u8]>> = Vec::with_capacity(LIVE + 1);
        live.extend((0..LIVE).map(|_| Box::<[u8]>::from(&data[..])));
        let start = Instant::now();
        for _ in 0..OPERATIONS {
            let i = rng.gen_range(0..live.len());
            drop(std::hint::black_box(live.swap_remove(i)));
            live.push(Box::from(&data[..]));
        }
        (start.elapsed().as_secs_f64(), 0.0)
    } else {
        let prefaulted = side == "logalloc-no-compaction";
        let limit = if prefaulted {
            1 << 30
        } else {
            (LIVE * SIZE) * 5 / 4
        };
        let pool = SegmentPool::new(PoolConfig::default().with_memory_limit(limit)).expect("pool");
        let mut region = Region::new(&pool);
        if prefaulted {
            // More than the timed loop will ever append (6 x LIVE objects).
            let all: Vec<_> = (0..8 * LIVE)
                .map(|_| region.alloc_bytes(&data).expect("prefault"))
                .collect();
            for h in all {
                region.free(h).expect("free");
            }
        }
        let mut live = Vec::with_capacity(LIVE + 1);
        live.extend((0..LIVE).map(|_| region.alloc_bytes(&data).expect("fill")));
        let before = region.stats().reclaim_time;
        let start = Instant::now();
        for _ in 0..OPERATIONS {
            let i = rng.gen_range(0..live.len());
            region.free(live.swap_remove(i)).expect("free");
            live.push(region.alloc_bytes(&data).expect("alloc"));
        }
        let seconds = start.elapsed().as_secs_f64();
        let reclaim = (region.stats().reclaim_time - before).as_secs_f64();
        if prefaulted {
            assert_eq!(reclaim, 0.0, "the prefaulted pool never reclaims");
        }
        (seconds, reclaim)
    };
    let per_op = |s: f64| s * 1e9 / OPERATIONS as f64;
    println!("{:.1} {:.1}", per_op(seconds), per_op(reclaim));
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        child(&args[i + 1]);
        return;
    }
    let repeat: usize = args
        .iter()
        .position(|a| a == "--repeat")
        .map_or(3, |i| args[i + 1].parse().expect("--repeat takes a count"));
    let exe = std::env::current_exe().expect("current_exe");
    let sides = ["system", "logalloc-no-compaction", "logalloc-0.8"];
    println!(
        "W1 steady state: {LIVE} live objects of {SIZE} B, {OPERATIONS} free+alloc operations"
    );
    println!(
        "| round | system ns/op | logalloc, no compaction: ns/op (x sys) | logalloc at live/0.8: ns/op (x sys; reclaim ns/op) |"
    );
    println!("|---|---|---|---|");
    for round in 1..=repeat {
        let results: Vec<(f64, f64)> = sides
            .iter()
            .map(|side| {
                let out = Command::new(&exe)
                    .args(["--child", side])
                    .output()
                    .expect("run child");
                assert!(
                    out.status.success(),
                    "{side}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let line = String::from_utf8_lossy(&out.stdout).to_string();
                let mut fields = line
                    .split_whitespace()
                    .map(|f| f.parse::<f64>().expect("number"));
                (
                    fields.next().expect("ns/op"),
                    fields.next().expect("reclaim"),
                )
            })
            .collect();
        let system = results[0].0;
        println!(
            "| {round} | {system:.1} | {:.1} ({:.2}x) | {:.1} ({:.2}x; {:.1}) |",
            results[1].0,
            system / results[1].0,
            results[2].0,
            system / results[2].0,
            results[2].1
        );
    }
}
