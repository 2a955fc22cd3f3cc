//! The report of one case: each engine's figures, the ratios
//! replica/fjall, and for reads the replica's cache hit ratio beside the
//! LRU bound simulated over the run's own trace of keys.

use std::io::Write;
use std::path::Path;

use replica_stress::LruSimulator;
use serde_json::Value;

use super::{EngineKind, Result};

/// One engine's simulated LRU over its trace: at the cache's nominal
/// capacity in partitions, and at the partitions its cache held at the
/// end (the replica's).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LruBound {
    /// Keys in the trace (every read of the run).
    pub(crate) traced: u64,
    /// The hit ratio of an LRU of the nominal capacity.
    pub(crate) nominal: f64,
    /// The partitions the cache held at the end, and an LRU's hit ratio
    /// at that capacity.
    pub(crate) at_held: Option<(u64, f64)>,
}

/// One case's results.
#[derive(Debug, Clone)]
pub(crate) struct Report {
    pub(crate) title: String,
    pub(crate) results: Vec<(EngineKind, Value, Option<LruBound>)>,
    /// The cache's capacity in partitions (its size over a partition's
    /// value bytes) and the partitions of the data, for reads.
    pub(crate) lru_capacity: Option<(u64, u64)>,
}

impl Report {
    pub(crate) fn new(title: String) -> Self {
        Report {
            title,
            results: Vec::new(),
            lru_capacity: None,
        }
    }

    pub(crate) fn with_lru_capacity(mut self, capacity: u64, partitions: u64) -> Self {
        self.lru_capacity = Some((capacity, partitions));
        self
    }

    pub(crate) fn add(&mut self, engine: EngineKind, result: Value) {
        self.results.push((engine, result, None));
    }

    /// Adds a read result with its trace (each thread's keys in order).
    pub(crate) fn add_with_trace(&mut self, engine: EngineKind, result: Value, trace: &[Vec<u32>]) {
        let bound = self.lru_capacity.map(|(capacity, universe)| {
            let held = result["engine"]["cache"]["partitions"].as_u64();
            LruBound {
                traced: trace.iter().map(|t| t.len() as u64).sum(),
                nominal: simulate(trace, capacity, universe),
                at_held: held.map(|h| (h, simulate(trace, h, universe))),
            }
        });
        self.results.push((engine, result, bound));
    }

    fn get(&self, engine: EngineKind) -> Option<&Value> {
        self.results
            .iter()
            .find(|(e, _, _)| *e == engine)
            .map(|(_, r, _)| r)
    }

    /// Writes the case: a line per engine, the ratios, the cache.
    pub(crate) fn write(&self, out: &mut impl Write) -> Result<()> {
        writeln!(out, "\n== {}", self.title)?;
        writeln!(
            out,
            "{:<8} {:>12} {:>9} {:>9} {:>9} {:>9} {:>10} {:>9} {:>9} {:>16}",
            "engine",
            "op/s",
            "p50 ms",
            "p95 ms",
            "p99 ms",
            "max ms",
            "CPU us/op",
            "RSS MiB",
            "stall ms",
            "checked"
        )?;
        for (engine, r, _) in &self.results {
            let f = |k: &str| r[k].as_f64().unwrap_or(f64::NAN);
            let checked = if r.get("reads").is_some() {
                format!("{}/{}", r["checked"], r["reads"])
            } else {
                "-".to_string()
            };
            writeln!(
                out,
                "{:<8} {:>12.0} {:>9.3} {:>9.3} {:>9.3} {:>9.1} {:>10.1} {:>9.0} {:>9} {:>16}",
                engine.name(),
                f("op_rate"),
                f("p50_us") / 1000.0,
                f("p95_us") / 1000.0,
                f("p99_us") / 1000.0,
                f("max_us") / 1000.0,
                f("cpu_us_per_op"),
                f("peak_rss") / f64::from(1u32 << 20),
                r["stall_ms"].as_u64().unwrap_or(0),
                checked,
            )?;
            if r["errors"].as_u64().unwrap_or(0) > 0 || r["bad"].as_u64().unwrap_or(0) > 0 {
                writeln!(
                    out,
                    "  {}: {} errors (first: {}), {} reads not as written (first: {})",
                    engine.name(),
                    r["errors"],
                    r["first_error"],
                    r["bad"],
                    r["first_bad"]
                )?;
            }
        }
        if let (Some(a), Some(b)) = (self.get(EngineKind::Replica), self.get(EngineKind::Fjall)) {
            let ratio = |k: &str| {
                let (x, y) = (
                    a[k].as_f64().unwrap_or(f64::NAN),
                    b[k].as_f64().unwrap_or(f64::NAN),
                );
                format!("{:.2}x", x / y)
            };
            let per_cpu = |r: &Value| {
                r["ops"].as_f64().unwrap_or(0.0) / r["cpu_seconds"].as_f64().unwrap_or(f64::NAN)
            };
            writeln!(
                out,
                "replica/fjall: op/s {}, ops per CPU-second {:.2}x, CPU per op {}, p50 {}, p95 {}, p99 {}, max {}, peak RSS {}, longest stall {}",
                ratio("op_rate"),
                per_cpu(a) / per_cpu(b),
                ratio("cpu_us_per_op"),
                ratio("p50_us"),
                ratio("p95_us"),
                ratio("p99_us"),
                ratio("max_us"),
                ratio("peak_rss"),
                ratio("stall_ms"),
            )?;
        }
        for (engine, r, bound) in &self.results {
            let Some(bound) = bound else { continue };
            let (capacity, partitions) = self.lru_capacity.unwrap_or_default();
            let cache = &r["engine"]["cache"];
            let mut line = format!(
                "{} trace: {} keys; LRU bound {:.1}% at {capacity} of {partitions} partitions (the cache's size over a partition's values)",
                engine.name(),
                bound.traced,
                bound.nominal * 100.0
            );
            if let Some((held, ratio)) = bound.at_held {
                line += &format!(", {:.1}% at the {held} it held at the end", ratio * 100.0);
            }
            if let (Some(hits), Some(misses)) = (cache["hits"].as_u64(), cache["misses"].as_u64()) {
                let before = &r["engine_before"]["cache"];
                let hits = hits - before["hits"].as_u64().unwrap_or(0);
                let misses = misses - before["misses"].as_u64().unwrap_or(0);
                let ratio = hits as f64 / (hits + misses).max(1) as f64;
                line += &format!(
                    "; measured {:.1}% ({hits} hits, {misses} misses, {:+.1} points from the bound); cache region {} of a {} share ({:.2}x), {} evictions",
                    ratio * 100.0,
                    (ratio - bound.nominal) * 100.0,
                    replica_stress::units::format_bytes(
                        cache["region_bytes"].as_u64().unwrap_or(0)
                    ),
                    replica_stress::units::format_bytes(cache["share"].as_u64().unwrap_or(0)),
                    cache["region_bytes"].as_f64().unwrap_or(0.0)
                        / cache["share"].as_f64().unwrap_or(f64::NAN),
                    cache["evictions"].as_u64().unwrap_or(0)
                        - before["evictions"].as_u64().unwrap_or(0),
                );
            }
            let blocks = &r["engine"]["block_cache"];
            if let (Some(loads), Some(cached)) = (
                blocks["data_loads"].as_u64(),
                blocks["data_cached"].as_u64(),
            ) {
                let before = &r["engine_before"]["block_cache"];
                let loads = loads - before["data_loads"].as_u64().unwrap_or(0);
                let cached = cached - before["data_cached"].as_u64().unwrap_or(0);
                line += &format!(
                    "; its block cache answered {:.1}% of {loads} data block loads ({:.2} a read)",
                    cached as f64 * 100.0 / loads.max(1) as f64,
                    loads as f64 / bound.traced.max(1) as f64
                );
            }
            writeln!(out, "{line}")?;
        }
        Ok(())
    }
}

/// Reads the trace files of `dir` (each thread's keys, 32-bit
/// little-endian, in the order it read them).
pub(crate) fn read_trace(dir: &Path) -> Result<Vec<Vec<u32>>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()?;
    files.sort();
    files
        .iter()
        .map(|f| {
            let bytes = std::fs::read(f)?;
            if bytes.len() % 4 != 0 {
                return Err(format!("trace {} is torn", f.display()).into());
            }
            Ok(bytes
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect())
        })
        .collect()
}

/// The hit ratio of an LRU of `capacity` keys of `0..universe` over the
/// interleaved `traces`.
pub(crate) fn simulate(traces: &[Vec<u32>], capacity: u64, universe: u64) -> f64 {
    let mut lru = LruSimulator::new(capacity as usize, universe);
    for k in replica_stress::interleave_traces(traces) {
        lru.access(u64::from(k));
    }
    lru.hit_ratio()
}
