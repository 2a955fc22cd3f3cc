//! Flush-policy simulation: writers at a fixed offered load against a
//! simulated disk of fixed bandwidth, in simulated (deterministic) time, the
//! default policy (largest memtable at the soft limit, one data-writing flush
//! at a time) side by side with the per-memtable policy it replaced.
//!
//! The real `DirtyMemoryManager` (in `LoopMode::Manual`) and the real
//! `RegionGroup` make every decision and do every byte of accounting; only
//! time, the disk and the writers are simulated. Writers are open-loop: a
//! write arrives every `write_size / offered_load` seconds, whatever
//! happened to the ones before; its latency is the time it waited for the
//! group to admit it (FIFO).
//!
//! Usage: `cargo bench -p replmem-dirty-memory --bench flush_policy -- [--scale F]`
//! (`F` multiplies the simulated duration; default 1.0 = 60 simulated
//! seconds per run; `--scale 0.1` for a quick run).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use dirty_memory::{
    DirtyMemoryConfig, DirtyMemoryManager, Flush, FlushPolicy, FlushTarget, LoopMode,
};
use hdrhistogram::Histogram;
use logalloc::{RegionId, RegionListener};
use region_group::RegionGroup;

const MIB: usize = 1 << 20;
const MS: u64 = 1_000_000;
const SEC: u64 = 1_000_000_000;

/// The simulated machine and workload.
#[derive(Debug, Clone, Copy)]
struct Workload {
    budget: usize,
    disk_bytes_per_sec: usize,
    /// Disk time each flush spends before its data (file creation, seeks),
    /// consuming bandwidth like data does.
    flush_overhead: u64,
    /// Tail work after the data (index, fsync, hand-off); holds no permit.
    tail: u64,
    tables: usize,
    write_size: usize,
    offered_bytes_per_sec: usize,
    duration: u64,
    tick: u64,
}

/// One memtable flush in progress on the simulated disk.
struct DiskJob {
    flush: Flush,
    overhead_left: f64,
    data_left: f64,
}

#[derive(Default)]
struct SimState {
    next_region: u64,
    active: Vec<RegionId>,
    table_of: HashMap<RegionId, usize>,
    writing: Vec<DiskJob>,
    tails: Vec<(u64, Flush)>,
    flush_sizes: Vec<usize>,
    now: u64,
}

impl SimState {
    fn fresh_region(&mut self, group: &RegionGroup, table: usize) -> RegionId {
        self.next_region += 1;
        let id = RegionId::from_raw(self.next_region);
        group.add(id, 0);
        self.table_of.insert(id, table);
        id
    }
}

/// The memtables' owner: seals the table's memtable (a fresh one takes its
/// writes) and queues the flush on the simulated disk.
struct SimTarget {
    state: Arc<Mutex<SimState>>,
    workload: Workload,
}

impl FlushTarget for SimTarget {
    fn start_flush(&self, flush: Flush) {
        let group = Arc::clone(flush.group());
        let region = flush.region();
        let mut s = self.state.lock().unwrap();
        let table = s.table_of[&region];
        let fresh = s.fresh_region(&group, table);
        s.active[table] = fresh;
        group.ground_evictable(region);
        let size = group.region_size(region).map_or(0, |(size, _)| size);
        s.flush_sizes.push(size);
        let overhead = self.workload.disk_bytes_per_sec as f64
            * self.workload.flush_overhead as f64
            / SEC as f64;
        s.writing.push(DiskJob {
            flush,
            overhead_left: overhead,
            data_left: size as f64,
        });
    }

    fn flush_failed_permanently(&self, region: logalloc::RegionId, error: &dirty_memory::Error) {
        panic!("no flush of this test fails permanently, yet {region} did: {error}");
    }
}

struct RunResult {
    name: &'static str,
    offered: usize,
    admitted_bytes: u64,
    seconds: f64,
    latency_us: Histogram<u64>,
    blocked_writes: u64,
    writes: u64,
    flush_sizes: Vec<usize>,
    peak_real: usize,
    budget: usize,
    max_writers: usize,
}

fn run(name: &'static str, policy: FlushPolicy, w: Workload) -> RunResult {
    let state = Arc::new(Mutex::new(SimState::default()));
    let mut config = DirtyMemoryConfig::new(name, w.budget);
    config.loop_mode = LoopMode::Manual;
    config.policy = policy;
    let target = Arc::new(SimTarget {
        state: Arc::clone(&state),
        workload: w,
    });
    let m = DirtyMemoryManager::new(config, target).expect("valid config");
    let group = Arc::clone(m.group());
    {
        let mut s = state.lock().unwrap();
        for t in 0..w.tables {
            let r = s.fresh_region(&group, t);
            s.active.push(r);
        }
    }
    // Zipf-like table popularity: table i gets weight 1/(i+1).
    let weights: Vec<f64> = (0..w.tables).map(|i| 1.0 / (i as f64 + 1.0)).collect();
    let total_weight: f64 = weights.iter().sum();
    let mut credit = vec![0.0f64; w.tables];

    let interval = (w.write_size as u128 * SEC as u128 / w.offered_bytes_per_sec as u128) as u64;
    let mut next_arrival = 0u64;
    let mut queue: std::collections::VecDeque<(u64, usize)> = Default::default();
    let mut latency_us =
        Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).expect("histogram bounds");
    let (mut admitted_bytes, mut writes, mut blocked_writes) = (0u64, 0u64, 0u64);
    let mut peak_real = 0usize;
    let disk_per_tick = w.disk_bytes_per_sec as f64 * w.tick as f64 / SEC as f64;

    // Picks the table of the next write (deterministic weighted round-robin).
    let pick_table = |credit: &mut Vec<f64>| {
        for (c, wt) in credit.iter_mut().zip(&weights) {
            *c += wt / total_weight;
        }
        let (best, _) =
            credit.iter().enumerate().fold(
                (0, f64::MIN),
                |acc, (i, &c)| if c > acc.1 { (i, c) } else { acc },
            );
        credit[best] -= 1.0;
        best
    };

    let apply = |table: usize, state: &Mutex<SimState>| {
        let region = state.lock().unwrap().active[table];
        group.increase_usage(region, w.write_size);
    };

    let mut now = 0u64;
    while now < w.duration {
        state.lock().unwrap().now = now;
        // Queued writers first (FIFO), at this tick's time.
        while let Some(&(arrival, table)) = queue.front() {
            if !group.execution_permitted() {
                break;
            }
            queue.pop_front();
            apply(table, &state);
            latency_us
                .record(((now - arrival) / 1000).max(1))
                .expect("in bounds");
            admitted_bytes += w.write_size as u64;
            writes += 1;
        }
        // New arrivals in [now, now + tick).
        while next_arrival < now + w.tick {
            let table = pick_table(&mut credit);
            if queue.is_empty() && group.execution_permitted() {
                apply(table, &state);
                latency_us.record(1).expect("in bounds");
                admitted_bytes += w.write_size as u64;
                writes += 1;
            } else {
                queue.push_back((next_arrival, table));
                blocked_writes += 1;
            }
            next_arrival += interval;
        }
        peak_real = peak_real.max(group.real_usage());
        // The flush loop's decisions.
        m.poll_flushes().expect("manual mode");
        // The disk: bandwidth shared by the flushes writing data.
        let mut s = state.lock().unwrap();
        let n = s.writing.len();
        if n > 0 {
            let share = disk_per_tick / n as f64;
            let mut done = Vec::new();
            for (i, job) in s.writing.iter_mut().enumerate() {
                let mut budget = share;
                let o = budget.min(job.overhead_left);
                job.overhead_left -= o;
                budget -= o;
                let d = budget.min(job.data_left);
                job.data_left -= d;
                if d > 0.0 {
                    job.flush.account_written(d.ceil() as usize);
                }
                if job.overhead_left <= 0.0 && job.data_left <= 0.0 {
                    done.push(i);
                }
            }
            for i in done.into_iter().rev() {
                let mut job = s.writing.swap_remove(i);
                job.flush.account_written(usize::MAX);
                job.flush.data_written();
                s.tails.push((now + w.tail, job.flush));
            }
        }
        // Tails that are over: the memtable leaves the group.
        let mut finished = Vec::new();
        let mut i = 0;
        while i < s.tails.len() {
            if s.tails[i].0 <= now {
                finished.push(s.tails.swap_remove(i).1);
            } else {
                i += 1;
            }
        }
        drop(s);
        for flush in finished {
            let region = flush.region();
            let g = Arc::clone(flush.group());
            flush.finish_releasing(|| {
                let size = g.region_size(region).map_or(0, |(size, _)| size);
                g.del(region, size);
            });
            state.lock().unwrap().table_of.remove(&region);
        }
        now += w.tick;
    }
    // Writers still queued at the end count with their wait so far.
    for &(arrival, _) in &queue {
        latency_us
            .record(((now - arrival) / 1000).max(1))
            .expect("in bounds");
    }
    let metrics = m.metrics();
    let flush_sizes = std::mem::take(&mut state.lock().unwrap().flush_sizes);
    // Hand the remaining flushes back (abandoned flushes are fine here: the
    // run is over) so the manager can shut down.
    {
        let mut s = state.lock().unwrap();
        s.writing.clear();
        s.tails.clear();
    }
    m.shutdown();
    RunResult {
        name,
        offered: w.offered_bytes_per_sec,
        admitted_bytes,
        seconds: w.duration as f64 / SEC as f64,
        latency_us,
        blocked_writes,
        writes: writes + queue.len() as u64,
        flush_sizes,
        peak_real: peak_real.max(metrics.peak_real_dirty),
        budget: w.budget,
        max_writers: metrics.max_concurrent_data_writers,
    }
}

fn mib(bytes: f64) -> f64 {
    bytes / MIB as f64
}

fn main() {
    let mut scale = 1.0f64;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--scale" => {
                scale = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .filter(|s: &f64| *s > 0.0)
                    .unwrap_or_else(|| {
                        eprintln!("--scale needs a positive number");
                        std::process::exit(2)
                    })
            }
            "--bench" => {}
            other => {
                eprintln!("unknown argument {other}; usage: flush_policy [--scale F]");
                std::process::exit(2);
            }
        }
    }
    let base = Workload {
        budget: 256 * MIB,
        disk_bytes_per_sec: 200 * MIB,
        flush_overhead: 10 * MS,
        tail: 20 * MS,
        tables: 16,
        write_size: 16 << 10,
        offered_bytes_per_sec: 0,
        duration: (60.0 * scale * SEC as f64) as u64,
        tick: MS,
    };
    println!(
        "flush-policy simulation: budget {} MiB, disk {} MiB/s, {} ms overhead + {} ms tail per flush, {} tables (1/(i+1) popularity), {} KiB writes, {:.1} simulated s per run",
        base.budget / MIB,
        base.disk_bytes_per_sec / MIB,
        base.flush_overhead / MS,
        base.tail / MS,
        base.tables,
        base.write_size >> 10,
        base.duration as f64 / SEC as f64
    );
    println!();
    println!(
        "{:<13} {:>8} {:>9} {:>6} {:>8} {:>8} {:>8} {:>9} {:>8} {:>7} {:>10} {:>10} {:>10} {:>12} {:>4}",
        "policy",
        "offered",
        "through",
        "ratio",
        "p95 ms",
        "p99 ms",
        "p99.9 ms",
        "max ms",
        "held %",
        "flushes",
        "mean MiB",
        "min MiB",
        "max MiB",
        "peak/budget",
        "par"
    );
    for load_pct in [50usize, 70, 85, 120] {
        let w = Workload {
            offered_bytes_per_sec: base.disk_bytes_per_sec * load_pct / 100,
            ..base
        };
        let results = [
            run("default", FlushPolicy::LargestAtSoftLimit, w),
            run("per-memtable", FlushPolicy::per_memtable_default(), w),
        ];
        let base_tp = results[0].admitted_bytes as f64 / results[0].seconds;
        for r in &results {
            let tp = r.admitted_bytes as f64 / r.seconds;
            let q = |p: f64| r.latency_us.value_at_quantile(p) as f64 / 1000.0;
            let sizes = &r.flush_sizes;
            let mean = sizes.iter().sum::<usize>() as f64 / sizes.len().max(1) as f64;
            println!(
                "{:<13} {:>5}MiB/s {:>5.1}MiB/s {:>6.3} {:>8.1} {:>8.1} {:>8.1} {:>9.1} {:>7.2}% {:>7} {:>10.1} {:>10.1} {:>10.1} {:>6.0}/{:<3}MiB {:>4}",
                r.name,
                r.offered / MIB,
                mib(tp),
                tp / base_tp,
                q(0.95),
                q(0.99),
                q(0.999),
                r.latency_us.max() as f64 / 1000.0,
                100.0 * r.blocked_writes as f64 / r.writes.max(1) as f64,
                sizes.len(),
                mib(mean),
                mib(sizes.iter().copied().min().unwrap_or(0) as f64),
                mib(sizes.iter().copied().max().unwrap_or(0) as f64),
                mib(r.peak_real as f64),
                r.budget / MIB,
                r.max_writers,
            );
        }
    }
    println!();
    println!(
        "through = admitted write throughput; ratio = throughput / default policy's at the same load;"
    );
    println!(
        "p95..max = admission latency of writes (0 when admitted at once); held % = writes that had to queue;"
    );
    println!(
        "flushes = flushes started, with their memtable sizes; par = most flushes writing data at once."
    );
}
