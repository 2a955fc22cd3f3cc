//! Admission fast path of `RegionGroup::run_when_memory_available` against a
//! bare `parking_lot::Mutex<usize>` counter, uncontended and with 2, 8 and 64
//! threads, in the same run. Each sample spreads its iterations over the
//! threads and times from a common start to the last join, so the reported
//! time is wall time per operation across all threads (inverse throughput).
//! At the end a table prints the region-group/mutex ratio per thread count.
//!
//! `cargo bench -p replmem-region-group --bench admission` (add `-- --quick` for a
//! short run).

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::{Arc, Barrier, Mutex as StdMutex};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion};
use logalloc::{RegionId, RegionListener};
use region_group::{ReclaimConfig, RegionGroup};

const THREADS: [usize; 4] = [1, 2, 8, 64];

/// Total time and iterations per (variant, threads), for the ratio table.
type Totals = BTreeMap<(usize, &'static str), (Duration, u64)>;

/// Runs `op` `iters` times spread over `threads` threads; returns the wall
/// time from a common start until all threads finished.
fn run_threads(threads: usize, iters: u64, op: &(impl Fn() + Sync)) -> Duration {
    if threads == 1 {
        let start = Instant::now();
        for _ in 0..iters {
            op();
        }
        return start.elapsed();
    }
    let per_thread = iters.div_ceil(threads as u64);
    let barrier = Barrier::new(threads + 1);
    let start = std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                barrier.wait();
                for _ in 0..per_thread {
                    op();
                }
            });
        }
        barrier.wait();
        Instant::now()
    });
    start.elapsed()
}

fn bench_admission(c: &mut Criterion, totals: &StdMutex<Totals>) {
    // A group with finite limits, well under them: every request takes the
    // fast path (lock, check queue and limits, unlock, run).
    let group = RegionGroup::new(
        "bench",
        ReclaimConfig {
            unspooled_hard_limit: 1 << 30,
            unspooled_soft_limit: 1 << 29,
            real_hard_limit: 1 << 31,
            ..Default::default()
        },
    );
    group.add(RegionId::from_raw(1), 1 << 20);
    let counter = parking_lot::Mutex::new(0usize);

    let mut g = c.benchmark_group("admission_fast_path");
    for threads in THREADS {
        let mut measure = |name: &'static str, op: &(dyn Fn() + Sync)| {
            g.bench_with_input(BenchmarkId::new(name, threads), &threads, |b, &threads| {
                b.iter_custom(|iters| {
                    let elapsed = run_threads(threads, iters, &op);
                    let mut t = totals.lock().unwrap();
                    let entry = t.entry((threads, name)).or_default();
                    entry.0 += elapsed;
                    entry.1 += iters;
                    elapsed
                });
            });
        };
        measure("parking_lot_mutex_counter", &|| {
            *counter.lock() += 1;
        });
        measure("region_group_run_when_memory_available", &|| {
            group
                .run_when_memory_available(|| black_box(1), None)
                .expect("fast path");
        });
    }
    g.finish();
    assert_eq!(
        group.metrics().blocked_requests_total,
        0,
        "every request took the fast path"
    );
}

fn main() {
    let totals = Arc::new(StdMutex::new(Totals::new()));
    let mut c = Criterion::default().configure_from_args();
    bench_admission(&mut c, &totals);
    c.final_summary();

    let totals = totals.lock().unwrap();
    println!(
        "\nadmission fast path, ns per operation (all samples incl. warm-up), ratio = region-group / mutex"
    );
    println!(
        "{:>8} {:>14} {:>14} {:>8}",
        "threads", "mutex ns/op", "group ns/op", "ratio"
    );
    for threads in THREADS {
        let per_op = |name| {
            totals
                .get(&(threads, name))
                .map(|&(d, n)| d.as_secs_f64() * 1e9 / n.max(1) as f64)
        };
        if let (Some(mutex), Some(group)) = (
            per_op("parking_lot_mutex_counter"),
            per_op("region_group_run_when_memory_available"),
        ) {
            println!(
                "{threads:>8} {mutex:>14.1} {group:>14.1} {:>8.2}",
                group / mutex
            );
        }
    }
}
