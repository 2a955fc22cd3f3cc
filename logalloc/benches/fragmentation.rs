//! RAMCloud's fragmentation workloads (Rumble et al., FAST 2014, table 2; the
//! same definitions as PMDK's `obj_fragmentation`) run against the system
//! allocator and against logalloc with its pool limited to live/0.8 and
//! live/0.9, side by side.
//!
//! Each workload fills memory with objects of the "before" sizes while
//! random deletes hold live object bytes at the cap, allocating 5x the cap
//! in total; then deletes a share of the objects at random; then does the
//! same with the "after" sizes. Every run happens in a fresh child process
//! (this binary re-executed with `--child`), so the system allocator's
//! resident memory is not polluted by earlier runs.
//!
//! Footprint: for the system allocator, peak resident memory (VmHWM) above
//! the resident memory after the object vector was preallocated and touched:
//! a counting `GlobalAlloc` would only see requested bytes and miss exactly
//! the fragmentation being measured. For logalloc, bytes of segments taken
//! from the system plus the handle table's heap bytes (both exact; the RSS
//! figure is printed too as a cross-check).
//!
//! `cargo bench -p replmem-logalloc --bench fragmentation -- --scale 0.0625`
//! (live cap = 1 GiB x scale; `--workloads W1,W3` runs a subset;
//! `--repeat 3` runs each allocator three times, interleaved, and keeps
//! the fastest run of each, which steadies throughput on a shared machine;
//! `--relaxed 5` adds a non-default run at live/0.9 with the compaction
//! threshold lowered from 15% to 5%, to show what the default rule costs;
//! `--object-headers` gives every logalloc object a size header, the layout
//! of pools larger than their handle-table entries can describe).

use std::hint::black_box;
use std::process::Command;
use std::time::Instant;

use logalloc::{PoolConfig, Region, SegmentPool};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

struct Workload {
    name: &'static str,
    before: (usize, usize),
    delete_percent: usize,
    after: Option<(usize, usize)>,
}

const WORKLOADS: [Workload; 8] = [
    Workload {
        name: "W1",
        before: (100, 100),
        delete_percent: 0,
        after: None,
    },
    Workload {
        name: "W2",
        before: (100, 100),
        delete_percent: 0,
        after: Some((130, 130)),
    },
    Workload {
        name: "W3",
        before: (100, 100),
        delete_percent: 90,
        after: Some((130, 130)),
    },
    Workload {
        name: "W4",
        before: (100, 150),
        delete_percent: 0,
        after: Some((200, 250)),
    },
    Workload {
        name: "W5",
        before: (100, 150),
        delete_percent: 90,
        after: Some((200, 250)),
    },
    Workload {
        name: "W6",
        before: (100, 200),
        delete_percent: 50,
        after: Some((1000, 2000)),
    },
    Workload {
        name: "W7",
        before: (1000, 2000),
        delete_percent: 90,
        after: Some((1500, 2500)),
    },
    Workload {
        name: "W8",
        before: (50, 150),
        delete_percent: 90,
        after: Some((5000, 15000)),
    },
];

/// Segment size used for a workload: 128 KiB (the default) unless the
/// largest object exceeds 10% of it, as W8's 15,000-byte objects do; then
/// the smallest power of two that admits them (256 KiB).
fn segment_size(w: &Workload) -> usize {
    let largest = w.after.map_or(w.before.1, |a| a.1).max(w.before.1);
    let mut size = 128 << 10;
    while size / 10 < largest {
        size *= 2;
    }
    size
}

struct Stats {
    allocations: u64,
    allocated_bytes: u64,
    seconds: f64,
}

/// An allocator under test: `alloc(size)` returns an object holding a copy
/// of the first `size` bytes of the benchmark's data, `free` releases it.
/// One value with both methods, so neither side pays for sharing its state
/// between two closures.
trait Heap {
    type Object;
    fn alloc(&mut self, size: usize) -> Result<Self::Object, String>;
    fn free(&mut self, object: Self::Object);
}

/// glibc malloc through `Box<[u8]>`.
struct SystemHeap<'a> {
    data: &'a [u8],
}

impl Heap for SystemHeap<'_> {
    type Object = Box<[u8]>;

    #[inline]
    fn alloc(&mut self, size: usize) -> Result<Box<[u8]>, String> {
        let mut v = Vec::with_capacity(size);
        v.extend_from_slice(&self.data[..size]);
        Ok(v.into_boxed_slice())
    }

    #[inline]
    fn free(&mut self, object: Box<[u8]>) {
        drop(black_box(object));
    }
}

/// One logalloc region.
struct RegionHeap<'a> {
    region: &'a mut Region,
    data: &'a [u8],
    count: u64,
    /// Peak footprint of the table and slot lists, sampled every 4096
    /// allocations: the slot lists shrink and grow, so the final value is
    /// not the peak.
    peak_table: usize,
}

impl Heap for RegionHeap<'_> {
    type Object = logalloc::Handle;

    #[inline]
    fn alloc(&mut self, size: usize) -> Result<logalloc::Handle, String> {
        let handle = self
            .region
            .alloc_bytes(&self.data[..size])
            .map_err(|e| e.to_string());
        self.count += 1;
        if self.count.is_multiple_of(4096) {
            self.peak_table = self.peak_table.max(self.region.stats().table_bytes);
        }
        handle
    }

    #[inline]
    fn free(&mut self, handle: logalloc::Handle) {
        self.region.free(handle).expect("free");
    }
}

/// The driver; `live` is a preallocated vector of (object, size).
fn run<H: Heap>(
    w: &Workload,
    cap: usize,
    heap: &mut H,
    live: &mut Vec<(H::Object, usize)>,
) -> Result<Stats, String> {
    let mut rng = SmallRng::seed_from_u64(0x5eed_f00d);
    let mut live_bytes = 0usize;
    let mut stats = Stats {
        allocations: 0,
        allocated_bytes: 0,
        seconds: 0.0,
    };
    let start = Instant::now();
    let phases = [Some(w.before), w.after];
    for (phase, sizes) in phases.into_iter().enumerate() {
        let Some((lo, hi)) = sizes else { continue };
        if phase == 1 {
            let deletes = live.len() * w.delete_percent / 100;
            for _ in 0..deletes {
                let i = rng.gen_range(0..live.len());
                let (object, size) = live.swap_remove(i);
                heap.free(object);
                live_bytes -= size;
            }
        }
        let mut allocated = 0usize;
        while allocated < 5 * cap {
            let size = rng.gen_range(lo..=hi);
            while live_bytes + size > cap {
                let i = rng.gen_range(0..live.len());
                let (object, size) = live.swap_remove(i);
                heap.free(object);
                live_bytes -= size;
            }
            let object = heap.alloc(size).map_err(|e| {
                format!(
                    "{e} after {} allocations in phase {}",
                    stats.allocations,
                    phase + 1
                )
            })?;
            live.push((object, size));
            live_bytes += size;
            allocated += size;
            stats.allocations += 1;
            stats.allocated_bytes += size as u64;
        }
    }
    stats.seconds = start.elapsed().as_secs_f64();
    Ok(stats)
}

fn status_kib(field: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"))
}

fn max_objects(w: &Workload, cap: usize) -> usize {
    let smallest = w.after.map_or(w.before.0, |a| a.0).min(w.before.0);
    cap / smallest + 2
}

/// Runs one workload on one allocator in this process and prints one line.
fn child(w: &Workload, allocator: &str, cap: usize) {
    let data = vec![0xA5u8; 1 << 16];
    let baseline;
    let result = if allocator == "system" {
        let mut live: Vec<(Box<[u8]>, usize)> = Vec::with_capacity(max_objects(w, cap));
        live.resize_with(live.capacity(), || (Box::default(), 0));
        live.clear();
        baseline = status_kib("VmRSS:");
        run(w, cap, &mut SystemHeap { data: &data }, &mut live)
            .map(|stats| (stats, 0usize, 0usize, 0u64, 0.0f64, 0.0f64))
    } else {
        // `logalloc@<fraction>` or `logalloc@<fraction>/<threshold %>`.
        let spec = allocator.trim_start_matches("logalloc@");
        let (fraction, threshold) = spec.split_once('/').unwrap_or((spec, "15"));
        let fraction: f64 = fraction.parse().expect("fraction");
        let segment = segment_size(w);
        let config = PoolConfig::default()
            .with_segment_size(segment)
            .with_memory_limit((cap as f64 / fraction) as usize)
            .with_compaction_min_free_percent(threshold.parse().expect("threshold"));
        let config = if std::env::args().any(|a| a == "--object-headers") {
            config.with_object_headers()
        } else {
            config
        };
        let pool = SegmentPool::new(config).expect("pool");
        let mut region = Region::new(&pool);
        let mut live = Vec::with_capacity(max_objects(w, cap));
        let dummy = logalloc::Handle::from_raw(1 << 63).expect("well-formed raw handle");
        live.resize(live.capacity(), (dummy, 0));
        live.clear();
        baseline = status_kib("VmRSS:");
        let mut heap = RegionHeap {
            region: &mut region,
            data: &data,
            count: 0,
            peak_table: 0,
        };
        let outcome = run(w, cap, &mut heap, &mut live);
        let peak_table = heap.peak_table;
        let stats = region.stats();
        let table = peak_table.max(stats.table_bytes);
        // Share of the compacted segments that were compacted below the
        // 15% rule because an allocation would otherwise have failed.
        let forced = stats.forced_compactions as f64 / stats.segments_compacted.max(1) as f64;
        outcome.map(|run| {
            (
                run,
                pool.stats().system_bytes,
                table,
                stats.bytes_compacted,
                forced,
                stats.reclaim_time.as_secs_f64(),
            )
        })
    };
    let peak = status_kib("VmHWM:");
    let rss = peak.saturating_sub(baseline) * 1024;
    match result {
        Ok((stats, segments, table, compacted, forced, reclaim)) => println!(
            "ok {} {} {} {} {} {} {} {} {}",
            stats.allocations,
            stats.allocated_bytes,
            stats.seconds,
            rss,
            segments,
            table,
            compacted,
            forced,
            reclaim
        ),
        Err(e) => println!("err {e}"),
    }
}

struct Row {
    allocations_per_second: f64,
    footprint: f64,
    table: f64,
    rss: f64,
    compacted_per_allocated: f64,
    forced_share: f64,
    seconds: f64,
    /// Seconds allocations spent reclaiming (`RegionStats::reclaim_time`).
    reclaim_seconds: f64,
}

fn parse(line: &str, cap: usize, system: bool) -> Result<Row, String> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    if fields.first() != Some(&"ok") {
        return Err(line.trim_start_matches("err ").to_string());
    }
    let n = |i: usize| fields[i].parse::<f64>().expect("number");
    let live = cap as f64;
    let rss = n(4) / live;
    Ok(Row {
        allocations_per_second: n(1) / n(3),
        footprint: if system { rss } else { (n(5) + n(6)) / live },
        table: n(6) / live,
        rss,
        compacted_per_allocated: n(7) / n(2),
        forced_share: n(8),
        seconds: n(3),
        reclaim_seconds: n(9),
    })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .map(|i| args[i + 1].clone())
    };
    let scale: f64 =
        value("--scale").map_or(0.0625, |s| s.parse().expect("--scale takes a number"));
    let cap = ((1u64 << 30) as f64 * scale) as usize;
    if let Some(i) = args.iter().position(|a| a == "--child") {
        let w = WORKLOADS
            .iter()
            .find(|w| w.name == args[i + 1])
            .expect("workload");
        child(w, &args[i + 2], cap);
        return;
    }
    let selected = value("--workloads");
    // `--repeat 3` runs every allocator three times and keeps the fastest.
    let repeat: usize = value("--repeat").map_or(1, |s| s.parse().expect("--repeat takes a count"));
    // `--relaxed 5` adds a non-default run at live/0.9 with the compaction
    // threshold lowered to 5% (informational: the default is 15%).
    let relaxed = value("--relaxed").map(|percent| format!("0.9/{percent}"));
    // `--object-headers`: logalloc keeps every object's size in a header in
    // front of it, the layout of pools too large for sizes in the
    // handle-table entries (more than about 8 GiB of 128 KiB segments).
    let headers = args.iter().any(|a| a == "--object-headers");
    let exe = std::env::current_exe().expect("current_exe");
    println!(
        "live cap {:.0} MiB (scale {scale}); footprint = bytes / live object bytes; \
         logalloc footprint = segments taken from the system + handle table",
        cap as f64 / (1 << 20) as f64
    );
    println!();
    let mut header = String::from(
        "| workload | seg | system: footprint | system: Malloc/s \
         | la@0.8: footprint (table; rss) | la@0.8: Malloc/s (x sys; reclaim share, rest x sys) | la@0.8: compacted/alloc (forced) \
         | la@0.9: footprint (table; rss) | la@0.9: Malloc/s (x sys; reclaim share, rest x sys) | la@0.9: compacted/alloc (forced) |",
    );
    if let Some(spec) = &relaxed {
        let p = spec.trim_start_matches("0.9/");
        header.push_str(&format!(
            " la@0.9 {p}% rule: footprint (table; rss) | la@0.9 {p}% rule: Malloc/s (x sys; reclaim share, rest x sys) \
             | la@0.9 {p}% rule: compacted/alloc (forced) |"
        ));
    }
    println!("{header}");
    println!("{}|", "|---".repeat(header.matches(" |").count()));
    for w in &WORKLOADS {
        if selected
            .as_ref()
            .is_some_and(|s| !s.split(',').any(|n| n == w.name))
        {
            continue;
        }
        let run_child = |allocator: &str| {
            let output = Command::new(&exe)
                .args(["--child", w.name, allocator, "--scale", &scale.to_string()])
                .args(headers.then_some("--object-headers"))
                .output()
                .expect("run child");
            let stdout = String::from_utf8_lossy(&output.stdout).to_string();
            let line = stdout
                .lines()
                .last()
                .unwrap_or("err child printed nothing")
                .to_string();
            if !output.status.success() {
                return format!(
                    "err child failed: {}",
                    String::from_utf8_lossy(&output.stderr)
                );
            }
            line
        };
        // Every allocator runs `repeat` times, interleaved (system, la@0.8,
        // la@0.9, system, ...) so that a change in the machine's load hits
        // all of them alike; each keeps its fastest run. Footprints and
        // compaction volumes are deterministic (fixed seed).
        let specs: Vec<String> = std::iter::once("system".to_string())
            .chain(
                ["0.8", "0.9"]
                    .into_iter()
                    .chain(relaxed.as_deref())
                    .map(|spec| format!("logalloc@{spec}")),
            )
            .collect();
        let mut best: Vec<Option<String>> = vec![None; specs.len()];
        for _ in 0..repeat {
            for (spec, best) in specs.iter().zip(&mut best) {
                let line = run_child(spec);
                let seconds = |line: &str| {
                    line.strip_prefix("ok ")
                        .and_then(|rest| rest.split_whitespace().nth(2))
                        .and_then(|s| s.parse::<f64>().ok())
                };
                let better = match (best.as_deref().and_then(seconds), seconds(&line)) {
                    (Some(old), Some(new)) => new < old,
                    (None, Some(_)) => true,
                    (_, None) => best.is_none(),
                };
                if better {
                    *best = Some(line);
                }
            }
        }
        let mut best = best.into_iter().map(|line| line.expect("at least one run"));
        let system =
            parse(&best.next().expect("system run"), cap, true).expect("system allocator run");
        let mut cells = vec![
            w.name.to_string(),
            format!("{}K", segment_size(w) >> 10),
            format!("{:.3}", system.footprint),
            format!("{:.2}", system.allocations_per_second / 1e6),
        ];
        for line in best {
            match parse(&line, cap, false) {
                Ok(row) => {
                    cells.push(format!(
                        "{:.3} ({:.3}; rss {:.3})",
                        row.footprint, row.table, row.rss
                    ));
                    // Same allocations on both sides, so a time ratio is a
                    // throughput ratio; "rest" leaves out the time spent
                    // reclaiming (compaction when the pool is dry).
                    cells.push(format!(
                        "{:.2} ({:.2}x; reclaim {:.0}%, rest {:.2}x)",
                        row.allocations_per_second / 1e6,
                        row.allocations_per_second / system.allocations_per_second,
                        100.0 * row.reclaim_seconds / row.seconds,
                        system.seconds / (row.seconds - row.reclaim_seconds),
                    ));
                    cells.push(format!(
                        "{:.2} ({:.0}%)",
                        row.compacted_per_allocated,
                        100.0 * row.forced_share
                    ));
                }
                Err(e) => {
                    cells.push(format!("FAILED: {e}"));
                    cells.push("-".into());
                    cells.push("-".into());
                }
            }
        }
        println!("| {} |", cells.join(" | "));
    }
}
