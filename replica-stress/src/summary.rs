//! The end-of-run summary: cassandra-stress's lines, then the dirty-memory
//! lines; as text, as JSON, and side by side with another run.

use std::fmt;
use std::path::Path;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde_json::{Value, json};

use crate::ProcessMemory;
use crate::error::{Error, io_err};
use crate::latency::{Counts, micros_to_ms, per_second};
use crate::units::format_bytes;

/// Latency figures of a run, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LatencySummary {
    /// Mean.
    pub mean_ms: f64,
    /// 50th percentile.
    pub median_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// 99.9th percentile.
    pub p999_ms: f64,
    /// Maximum.
    pub max_ms: f64,
}

impl LatencySummary {
    /// The figures of a histogram of microseconds (all 0 when it is empty).
    pub fn from_histogram(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return LatencySummary::default();
        }
        LatencySummary {
            mean_ms: h.mean() / 1000.0,
            median_ms: micros_to_ms(h.value_at_quantile(0.5)),
            p95_ms: micros_to_ms(h.value_at_quantile(0.95)),
            p99_ms: micros_to_ms(h.value_at_quantile(0.99)),
            p999_ms: micros_to_ms(h.value_at_quantile(0.999)),
            max_ms: micros_to_ms(h.max()),
        }
    }
}

/// Everything a run reports at its end.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// What ran (for comparisons: the flush policy).
    pub label: String,
    /// Totals of the run.
    pub counts: Counts,
    /// Total operation time: from the first operation to the last thread
    /// stopping.
    pub elapsed: Duration,
    /// Latencies of every operation.
    pub latency: LatencySummary,
    /// The reads' latencies alone (a mixed workload only).
    pub read_latency: Option<LatencySummary>,
    /// The writes' latencies alone (a mixed workload only).
    pub write_latency: Option<LatencySummary>,
    /// The highest real dirty memory: sampled at every interval's end, or
    /// the target's own high-water mark if higher.
    pub peak_real_dirty: u64,
    /// The dirty-memory budget.
    pub dirty_budget: u64,
    /// Flushes completed.
    pub flushes: u64,
    /// Bytes those flushes wrote.
    pub flushed_bytes: u64,
    /// Time writers spent blocked on dirty memory, summed over writers.
    pub writers_blocked: Duration,
    /// Bytes the commit log appended (0 without a commit log).
    pub commitlog_bytes: u64,
    /// The commit log's fdatasyncs.
    pub commitlog_syncs: u64,
    /// Log entries those syncs covered.
    pub commitlog_synced_entries: u64,
    /// Writes held until a sync covered them because periodic syncs lagged
    /// two intervals behind.
    pub commitlog_lag_waits: u64,
    /// Appends that waited for room in the commit log, by cause.
    pub commitlog_room_waits: crate::LogRoomWaits,
    /// The longest time during which no operation completed.
    pub longest_pause: Duration,
    /// Where writes spent their time, phase by phase: which phase a long
    /// pause was in.
    pub write_phases: replica::WritePhases,
    /// Intervals (seconds), the last one aside, in which no operation
    /// completed.
    pub idle_intervals: u64,
    /// The first error a target returned, if any.
    pub first_error: Option<String>,
    /// Why the run stopped before its duration or operation count, if it
    /// did (the data directory running out of space).
    pub stopped_early: Option<String>,
    /// The process's memory: peaks over the run (resident set and, where
    /// counted, live heap) and the live heap at its end.
    pub memory: ProcessMemory,
    /// Bytes the memtable pool held from the system at the end (its peak:
    /// it keeps what it took), part of the live heap.
    pub memtable_pool_bytes: u64,
    /// The memtable pool's limit as configured (0: unknown): the dirty
    /// budgets (the user tables' and the system tables'), plus the row
    /// cache's share or, without a cache, as much again as headroom.
    pub memory_pool_limit: u64,
    /// The system tables' dirty-memory budget, part of the pool.
    pub system_dirty_budget: u64,
    /// The row cache's share of the pool (0 without a cache).
    pub cache_share: u64,
    /// Client threads: the writers whose blocked time
    /// [`writers_blocked`](Self::writers_blocked) sums.
    pub threads: usize,
    /// Whether the run read through a row cache.
    pub cache_enabled: bool,
    /// Reads the row cache answered, over the run.
    pub cache_hits: u64,
    /// Reads the row cache passed on to the sstables, over the run.
    pub cache_misses: u64,
    /// Compaction's figures at the end.
    pub compaction: crate::CompactionFigures,
    /// The modelled devices' counters at the end (empty without a model):
    /// with the elapsed time, which device was busy, and how long the I/O
    /// waited for it.
    pub devices: Vec<replica::device::DeviceStats>,
}

/// Latency figures as JSON.
fn latency_json(l: &LatencySummary) -> Value {
    json!({
        "mean": l.mean_ms,
        "median": l.median_ms,
        "p95": l.p95_ms,
        "p99": l.p99_ms,
        "p99_9": l.p999_ms,
        "max": l.max_ms,
    })
}

/// A device's counters as JSON, its utilisation over `elapsed`.
pub(crate) fn device_json(d: &replica::device::DeviceStats, elapsed: Duration) -> Value {
    json!({
        "name": d.name,
        "bandwidth_bytes_per_s": d.bandwidth,
        "bytes_read": d.bytes_read,
        "bytes_written": d.bytes_written,
        "utilisation": d.utilisation(elapsed),
        "waits": d.waits,
        "waited_s": d.waited.as_secs_f64(),
    })
}

/// One write phase's figures as JSON.
fn phase_json(p: &replica::WritePhase) -> Value {
    json!({
        "total_s": p.total.as_secs_f64(),
        "max_ms": p.max.as_secs_f64() * 1000.0,
        "slow": p.slow,
    })
}

/// One figure of a summary, for comparisons.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figure {
    /// The figure's name, as the summary prints it.
    pub name: &'static str,
    /// Its unit.
    pub unit: &'static str,
    /// Its value.
    pub value: f64,
}

/// `1234567.8` as `1,234,568`, as cassandra-stress prints rates and totals.
fn thousands(value: f64) -> String {
    let digits = format!("{:.0}", value.max(0.0));
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `hh:mm:ss`, as cassandra-stress prints the total operation time.
fn hms(d: Duration) -> String {
    let s = d.as_secs();
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

impl Summary {
    /// Operations per second.
    pub fn op_rate(&self) -> f64 {
        per_second(self.counts.ops, self.elapsed)
    }

    /// Partitions per second.
    pub fn partition_rate(&self) -> f64 {
        per_second(self.counts.partitions, self.elapsed)
    }

    /// Rows per second.
    pub fn row_rate(&self) -> f64 {
        per_second(self.counts.rows, self.elapsed)
    }

    /// The row cache's hit ratio over the run, in `[0, 1]`; `None`
    /// without a cache or without reads.
    pub fn cache_hit_ratio(&self) -> Option<f64> {
        let total = self.cache_hits + self.cache_misses;
        (self.cache_enabled && total > 0).then(|| self.cache_hits as f64 / total as f64)
    }

    /// Whether the run read and no read found a row: the data directory
    /// held nothing for the load (a `read` without a population).
    pub fn reads_found_nothing(&self) -> bool {
        let c = &self.counts;
        c.reads > 0 && c.rows_read == 0
    }

    /// Time writers were blocked per client thread (the sum
    /// [`writers_blocked`](Self::writers_blocked) over the threads).
    pub fn blocked_per_thread(&self) -> Duration {
        self.writers_blocked / u32::try_from(self.threads.max(1)).unwrap_or(u32::MAX)
    }

    /// Mean bytes per flush (0 without flushes).
    pub fn mean_flush_size(&self) -> u64 {
        self.flushed_bytes.checked_div(self.flushes).unwrap_or(0)
    }

    /// Mean number of log entries one commit log sync covered (the group
    /// size of group commit; 0 without syncs).
    pub fn mean_sync_group(&self) -> f64 {
        if self.commitlog_syncs == 0 {
            0.0
        } else {
            self.commitlog_synced_entries as f64 / self.commitlog_syncs as f64
        }
    }

    /// The figures two runs are compared on, in the summary's order.
    pub fn figures(&self) -> Vec<Figure> {
        let f = |name, unit, value| Figure { name, unit, value };
        let l = &self.latency;
        let mut figures = vec![
            f("Op rate", "op/s", self.op_rate()),
            f("Partition rate", "pk/s", self.partition_rate()),
            f("Row rate", "row/s", self.row_rate()),
            f("Latency mean", "ms", l.mean_ms),
            f("Latency median", "ms", l.median_ms),
            f("Latency 95th percentile", "ms", l.p95_ms),
            f("Latency 99th percentile", "ms", l.p99_ms),
            f("Latency 99.9th percentile", "ms", l.p999_ms),
            f("Latency max", "ms", l.max_ms),
        ];
        for (name, kind) in [
            ("Read latency 99th percentile", &self.read_latency),
            ("Write latency 99th percentile", &self.write_latency),
        ] {
            if let Some(k) = kind {
                figures.push(f(name, "ms", k.p99_ms));
            }
        }
        figures.extend([
            f("Total partitions", "", self.counts.partitions as f64),
            f("Total errors", "", self.counts.errors as f64),
            f("Total operation time", "s", self.elapsed.as_secs_f64()),
            f(
                "Peak real dirty",
                "MiB",
                self.peak_real_dirty as f64 / 1048576.0,
            ),
            f("Flushes", "", self.flushes as f64),
            f(
                "Cache hit ratio",
                "%",
                self.cache_hit_ratio().unwrap_or(0.0) * 100.0,
            ),
            f(
                "Mean flush size",
                "MiB",
                self.mean_flush_size() as f64 / 1048576.0,
            ),
            f(
                "Time writers blocked",
                "s",
                self.writers_blocked.as_secs_f64(),
            ),
            f(
                "Longest pause",
                "ms",
                self.longest_pause.as_secs_f64() * 1000.0,
            ),
            f(
                "Longest log append",
                "ms",
                self.write_phases.log_append.max.as_secs_f64() * 1000.0,
            ),
            f(
                "Longest dirty-memory wait",
                "ms",
                self.write_phases.admission.max.as_secs_f64() * 1000.0,
            ),
            f(
                "Longest memtable apply",
                "ms",
                self.write_phases.memtable_apply.max.as_secs_f64() * 1000.0,
            ),
            f(
                "Commit log bytes",
                "MiB",
                self.commitlog_bytes as f64 / 1048576.0,
            ),
            f("Commit log syncs", "", self.commitlog_syncs as f64),
            f("Mean sync group", "writes", self.mean_sync_group()),
            f(
                "Writes held for a lagging sync",
                "",
                self.commitlog_lag_waits as f64,
            ),
            f(
                "Peak resident set",
                "MiB",
                self.memory.peak_resident.unwrap_or(0) as f64 / 1048576.0,
            ),
            f(
                "Peak live heap",
                "MiB",
                self.memory.peak_live_heap.unwrap_or(0) as f64 / 1048576.0,
            ),
        ]);
        figures
    }

    /// The summary as a JSON object.
    pub fn to_json(&self) -> Value {
        let l = &self.latency;
        let c = &self.counts;
        json!({
            "label": self.label,
            "op_rate": self.op_rate(),
            "partition_rate": self.partition_rate(),
            "row_rate": self.row_rate(),
            "latency_ms": latency_json(l),
            "read_latency_ms": self.read_latency.as_ref().map(latency_json),
            "write_latency_ms": self.write_latency.as_ref().map(latency_json),
            "total_operations": c.ops,
            "total_writes": c.writes,
            "total_reads": c.reads,
            "total_partitions": c.partitions,
            "total_rows": c.rows,
            "total_errors": c.errors,
            "total_operation_time_s": self.elapsed.as_secs_f64(),
            "dirty_memory": {
                "peak_real_bytes": self.peak_real_dirty,
                "budget_bytes": self.dirty_budget,
                "flushes": self.flushes,
                "flushed_bytes": self.flushed_bytes,
                "mean_flush_bytes": self.mean_flush_size(),
                "writers_blocked_s": self.writers_blocked.as_secs_f64(),
                "writers_blocked_per_thread_s": self.blocked_per_thread().as_secs_f64(),
                "threads": self.threads,
            },
            "commitlog": {
                "bytes": self.commitlog_bytes,
                "syncs": self.commitlog_syncs,
                "synced_entries": self.commitlog_synced_entries,
                "mean_sync_group": self.mean_sync_group(),
                "lag_waits": self.commitlog_lag_waits,
                "room_waits": {
                    "budget": self.commitlog_room_waits.budget,
                    "segment_switch": self.commitlog_room_waits.rotation,
                    "size_limit": self.commitlog_room_waits.size_limit,
                    "time_s": self.commitlog_room_waits.time.as_secs_f64(),
                },
            },
            "process_memory": {
                "peak_resident_bytes": self.memory.peak_resident,
                "live_heap_bytes": self.memory.live_heap,
                "peak_live_heap_bytes": self.memory.peak_live_heap,
                "dirty_budget_bytes": self.dirty_budget,
                "memtable_pool_bytes": self.memtable_pool_bytes,
                "memory_pool_limit_bytes": self.memory_pool_limit,
                "system_dirty_budget_bytes": self.system_dirty_budget,
                "cache_share_bytes": self.cache_share,
            },
            "total_rows_read": c.rows_read,
            "reads_found_nothing": self.reads_found_nothing(),
            "cache": {
                "enabled": self.cache_enabled,
                "hits": self.cache_hits,
                "misses": self.cache_misses,
                "hit_ratio": self.cache_hit_ratio(),
            },
            "longest_pause_ms": self.longest_pause.as_secs_f64() * 1000.0,
            "write_phases": {
                "slow_threshold_ms": replica::SLOW_PHASE.as_secs_f64() * 1000.0,
                "log_append": phase_json(&self.write_phases.log_append),
                "admission": phase_json(&self.write_phases.admission),
                "memtable_apply": phase_json(&self.write_phases.memtable_apply),
            },
            "idle_intervals": self.idle_intervals,
            "first_error": self.first_error,
            "stopped_early": self.stopped_early,
            "compaction": self.compaction.to_json(),
            "devices": self
                .devices
                .iter()
                .map(|d| device_json(d, self.elapsed))
                .collect::<Vec<_>>(),
        })
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.counts;
        let split = |total: f64| {
            let (w, r) = (
                per_second(c.writes, self.elapsed),
                per_second(c.reads, self.elapsed),
            );
            match (c.writes > 0, c.reads > 0) {
                (true, true) => format!(
                    "  [WRITE: {} op/s, READ: {} op/s]",
                    thousands(w),
                    thousands(r)
                ),
                (true, false) => format!("  [WRITE: {} op/s]", thousands(total)),
                (false, true) => format!("  [READ: {} op/s]", thousands(total)),
                (false, false) => String::new(),
            }
        };
        let l = &self.latency;
        writeln!(f, "Results ({}):", self.label)?;
        writeln!(
            f,
            "Op rate                   : {:>10} op/s{}",
            thousands(self.op_rate()),
            split(self.op_rate())
        )?;
        writeln!(
            f,
            "Partition rate            : {:>10} pk/s",
            thousands(self.partition_rate())
        )?;
        writeln!(
            f,
            "Row rate                  : {:>10} row/s",
            thousands(self.row_rate())
        )?;
        writeln!(f, "Latency mean              : {:>10.1} ms", l.mean_ms)?;
        writeln!(f, "Latency median            : {:>10.1} ms", l.median_ms)?;
        writeln!(f, "Latency 95th percentile   : {:>10.1} ms", l.p95_ms)?;
        writeln!(f, "Latency 99th percentile   : {:>10.1} ms", l.p99_ms)?;
        writeln!(f, "Latency 99.9th percentile : {:>10.1} ms", l.p999_ms)?;
        writeln!(f, "Latency max               : {:>10.1} ms", l.max_ms)?;
        for (name, kind) in [
            ("Read latency ", &self.read_latency),
            ("Write latency", &self.write_latency),
        ] {
            if let Some(k) = kind {
                writeln!(
                    f,
                    "{name}             : median {:.1}, p99 {:.1}, p99.9 {:.1}, max {:.1} ms",
                    k.median_ms, k.p99_ms, k.p999_ms, k.max_ms
                )?;
            }
        }
        writeln!(
            f,
            "Total partitions          : {:>10}",
            thousands(c.partitions as f64)
        )?;
        writeln!(
            f,
            "Total errors              : {:>10}",
            thousands(c.errors as f64)
        )?;
        writeln!(f, "Total operation time      : {:>10}", hms(self.elapsed))?;
        if let Some(e) = &self.first_error {
            writeln!(f, "First error               : {e}")?;
        }
        if let Some(why) = &self.stopped_early {
            writeln!(f, "Stopped early             : {why}")?;
        }
        if self.reads_found_nothing() {
            writeln!(
                f,
                "Warning                   : none of the {} reads found a row: the data \
                 directory holds no data for this load (write it first with `replica-stress \
                 write --data-dir DIR`, or add --populate yes); the figures above are of misses",
                thousands(c.reads as f64)
            )?;
        }
        writeln!(f)?;
        let share = if self.dirty_budget > 0 {
            format!(
                " ({:.1}%)",
                self.peak_real_dirty as f64 * 100.0 / self.dirty_budget as f64
            )
        } else {
            String::new()
        };
        writeln!(
            f,
            "Peak real dirty memory    : {:>10} of a {} budget{share}",
            format_bytes(self.peak_real_dirty),
            format_bytes(self.dirty_budget)
        )?;
        let m = &self.memory;
        let pool = self.memory_pool_limit;
        match m.peak_resident {
            Some(peak) if pool > 0 => writeln!(
                f,
                "Peak resident set         : {:>10} ({:.0}% of the memory pool below; the rest: heap \
                 outside the pool, I/O buffers, code)",
                format_bytes(peak),
                peak as f64 * 100.0 / pool as f64
            )?,
            Some(peak) if self.dirty_budget > 0 => writeln!(
                f,
                "Peak resident set         : {:>10} ({:.0}% of the dirty budget)",
                format_bytes(peak),
                peak as f64 * 100.0 / self.dirty_budget as f64
            )?,
            Some(peak) => writeln!(f, "Peak resident set         : {:>10}", format_bytes(peak))?,
            None => writeln!(
                f,
                "Peak resident set         :    unknown (no /proc/self/status)"
            )?,
        }
        if pool > 0 {
            let user = self.dirty_budget;
            let rest = pool.saturating_sub(user + self.system_dirty_budget);
            writeln!(
                f,
                "Memory pool (configured)  : {:>10} = dirty budget {} + system tables {} + {} {}",
                format_bytes(pool),
                format_bytes(user),
                format_bytes(self.system_dirty_budget),
                if self.cache_share > 0 {
                    "row cache share"
                } else {
                    "headroom (no row cache)"
                },
                format_bytes(rest),
            )?;
        }
        match (m.live_heap, m.peak_live_heap) {
            (Some(live), Some(peak)) => writeln!(
                f,
                "Live heap                 : {:>10} at the end, peak {}{}",
                format_bytes(live),
                format_bytes(peak),
                if self.memtable_pool_bytes > 0 {
                    format!(
                        "; the memory pool took {} of it",
                        format_bytes(self.memtable_pool_bytes)
                    )
                } else {
                    String::new()
                }
            )?,
            _ => writeln!(f, "Live heap                 :    not counted")?,
        }
        writeln!(
            f,
            "Flushes                   : {:>10}, mean size {}",
            thousands(self.flushes as f64),
            format_bytes(self.mean_flush_size())
        )?;
        match self.cache_hit_ratio() {
            Some(ratio) => writeln!(
                f,
                "Row cache hit ratio       : {:>9.1}% ({} hits, {} misses)",
                ratio * 100.0,
                thousands(self.cache_hits as f64),
                thousands(self.cache_misses as f64)
            )?,
            None if self.cache_enabled => {
                writeln!(f, "Row cache hit ratio       :          - (no reads)")?;
            }
            None => writeln!(f, "Row cache                 :        off")?,
        }
        let run = self.elapsed.as_secs_f64();
        writeln!(
            f,
            "Time writers blocked      : {:>10.3} s summed over {} client threads: {:.3} s per \
             thread{}",
            self.writers_blocked.as_secs_f64(),
            self.threads,
            self.blocked_per_thread().as_secs_f64(),
            if run > 0.0 {
                format!(
                    ", {:.0}% of the run",
                    self.blocked_per_thread().as_secs_f64() * 100.0 / run
                )
            } else {
                String::new()
            }
        )?;
        writeln!(
            f,
            "Longest pause, no op done : {:>10.1} ms ({} idle seconds)",
            self.longest_pause.as_secs_f64() * 1000.0,
            self.idle_intervals
        )?;
        let p = &self.write_phases;
        if self.counts.writes > 0 {
            let ms = |d: Duration| d.as_secs_f64() * 1000.0;
            writeln!(
                f,
                "Longest write phase       : log append {:.1} ms, dirty-memory wait {:.1} ms, \
                 memtable apply {:.1} ms",
                ms(p.log_append.max),
                ms(p.admission.max),
                ms(p.memtable_apply.max),
            )?;
            writeln!(
                f,
                "Writes slow in a phase    : log append {}, dirty-memory wait {}, \
                 memtable apply {} (over {} ms)",
                thousands(p.log_append.slow as f64),
                thousands(p.admission.slow as f64),
                thousands(p.memtable_apply.slow as f64),
                replica::SLOW_PHASE.as_millis(),
            )?;
        }
        if !self.compaction.strategy.is_empty() {
            write!(f, "{}", self.compaction)?;
        }
        for d in &self.devices {
            writeln!(
                f,
                "Device {:<19}: {:>8}/s, read {}, written {}, {:.1}% busy, \
                 I/O waited {:.1} s ({} waits)",
                d.name,
                format_bytes(d.bandwidth),
                format_bytes(d.bytes_read),
                format_bytes(d.bytes_written),
                d.utilisation(self.elapsed) * 100.0,
                d.waited.as_secs_f64(),
                thousands(d.waits as f64),
            )?;
        }
        if self.commitlog_bytes > 0 {
            writeln!(
                f,
                "Commit log                : {:>10}, {} syncs, mean group {:.1} writes",
                format_bytes(self.commitlog_bytes),
                thousands(self.commitlog_syncs as f64),
                self.mean_sync_group()
            )?;
            if self.commitlog_lag_waits > 0 {
                writeln!(
                    f,
                    "Held for a lagging sync   : {:>10} writes (the disk fell two intervals behind)",
                    thousands(self.commitlog_lag_waits as f64)
                )?;
            }
            let w = &self.commitlog_room_waits;
            if w.any() {
                writeln!(
                    f,
                    "Waited for log room       : {:>8.1} s (writes at the buffer budget {}, at a segment switch {}, at the size limit {})",
                    w.time.as_secs_f64(),
                    thousands(w.budget as f64),
                    thousands(w.rotation as f64),
                    thousands(w.size_limit as f64),
                )?;
            }
        }
        Ok(())
    }
}

/// The ratio `b / a`, `None` when `a` is 0 (or either is not finite).
fn ratio(a: f64, b: f64) -> Option<f64> {
    let r = b / a;
    (a != 0.0 && r.is_finite()).then_some(r)
}

/// Two summaries side by side, each figure with its ratio `b / a`
/// (`--compare` prints the baseline as `a`).
pub fn compare(a: &Summary, b: &Summary) -> String {
    let mut out = format!(
        "{:<32} {:>16} {:>16} {:>9}\n",
        "",
        a.label,
        b.label,
        format!("{}/{}", short(&b.label), short(&a.label))
    );
    for (fa, fb) in a.figures().iter().zip(b.figures()) {
        let name = if fa.unit.is_empty() {
            fa.name.to_owned()
        } else {
            format!("{} ({})", fa.name, fa.unit)
        };
        let r = ratio(fa.value, fb.value).map_or_else(|| "-".to_owned(), |r| format!("{r:.2}x"));
        // Counts (no unit) are whole numbers.
        let decimals = if fa.unit.is_empty() { 0 } else { 2 };
        out.push_str(&format!(
            "{:<32} {:>16.decimals$} {:>16.decimals$} {:>9}\n",
            name, fa.value, fb.value, r
        ));
    }
    out
}

fn short(label: &str) -> &str {
    label.split('-').next().unwrap_or(label)
}

/// `--compare`'s JSON: both summaries and the ratio `b / a` of each figure
/// (`null` where `a`'s is 0).
pub fn compare_json(a: &Summary, b: &Summary) -> Value {
    let ratios: serde_json::Map<String, Value> = a
        .figures()
        .iter()
        .zip(b.figures())
        .map(|(fa, fb)| (fa.name.to_owned(), json!(ratio(fa.value, fb.value))))
        .collect();
    json!({ "baseline": a.to_json(), "candidate": b.to_json(), "ratios": ratios })
}

/// Writes `value` to `path` as pretty-printed JSON.
///
/// # Errors
/// [`Error::Io`] if the file cannot be written.
pub fn write_json(path: &Path, value: &Value) -> Result<(), Error> {
    let mut text = serde_json::to_string_pretty(value).map_err(|e| Error::Report {
        what: "JSON summary",
        detail: e.to_string(),
    })?;
    text.push('\n');
    std::fs::write(path, text).map_err(io_err("write", path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::latency::new_histogram;

    pub(crate) fn sample(label: &str, ops: u64, p95_ms: f64) -> Summary {
        Summary {
            label: label.to_owned(),
            counts: Counts {
                ops,
                writes: ops,
                reads: 0,
                errors: 0,
                partitions: ops,
                rows: ops * 2,
                rows_read: 0,
            },
            elapsed: Duration::from_secs(10),
            latency: LatencySummary {
                mean_ms: 1.0,
                median_ms: 1.0,
                p95_ms,
                p99_ms: 3.0,
                p999_ms: 4.0,
                max_ms: 5.0,
            },
            read_latency: None,
            write_latency: None,
            peak_real_dirty: 100 << 20,
            dirty_budget: 200 << 20,
            flushes: 4,
            flushed_bytes: 400 << 20,
            writers_blocked: Duration::from_millis(1500),
            commitlog_bytes: 64 << 20,
            commitlog_syncs: 10,
            commitlog_synced_entries: 250,
            commitlog_lag_waits: 0,
            commitlog_room_waits: Default::default(),
            longest_pause: Duration::from_millis(250),
            write_phases: replica::WritePhases {
                log_append: replica::WritePhase {
                    total: Duration::from_secs(2),
                    max: Duration::from_millis(240),
                    slow: 3,
                },
                ..replica::WritePhases::default()
            },
            idle_intervals: 0,
            first_error: None,
            stopped_early: None,
            memory: ProcessMemory {
                peak_resident: Some(300 << 20),
                resident: Some(250 << 20),
                live_heap: Some(120 << 20),
                peak_live_heap: Some(150 << 20),
            },
            memtable_pool_bytes: 100 << 20,
            memory_pool_limit: 420 << 20,
            system_dirty_budget: 10 << 20,
            cache_share: 210 << 20,
            threads: 4,
            cache_enabled: true,
            cache_hits: 900,
            cache_misses: 100,
            compaction: crate::CompactionFigures::default(),
            devices: Vec::new(),
        }
    }

    #[test]
    fn latency_figures_come_from_the_histogram() {
        let mut h = new_histogram().unwrap();
        for ms in 1..=1000u64 {
            h.record(ms * 1000).unwrap();
        }
        let l = LatencySummary::from_histogram(&h);
        assert!((l.median_ms - 500.0).abs() < 1.0, "{l:?}");
        assert!((l.p95_ms - 950.0).abs() < 1.0, "{l:?}");
        assert!((l.p99_ms - 990.0).abs() < 1.0, "{l:?}");
        assert!((l.p999_ms - 999.0).abs() < 1.0, "{l:?}");
        assert!((l.max_ms - 1000.0).abs() < 1.0, "{l:?}");
        assert!((l.mean_ms - 500.5).abs() < 1.0, "{l:?}");
        assert_eq!(
            LatencySummary::from_histogram(&new_histogram().unwrap()),
            LatencySummary::default()
        );
    }

    #[test]
    fn text_has_cassandra_stress_lines_then_dirty_memory_lines() {
        let s = sample("soft-limit", 12_345, 2.0);
        let text = s.to_string();
        for line in [
            "Op rate                   :      1,234 op/s  [WRITE: 1,234 op/s]",
            "Partition rate            :      1,234 pk/s",
            "Row rate                  :      2,469 row/s",
            "Latency mean              :        1.0 ms",
            "Latency 95th percentile   :        2.0 ms",
            "Latency 99.9th percentile :        4.0 ms",
            "Latency max               :        5.0 ms",
            "Total partitions          :     12,345",
            "Total errors              :          0",
            "Total operation time      :   00:00:10",
            "Peak real dirty memory    :  100.0 MiB of a 200.0 MiB budget (50.0%)",
            "Flushes                   :          4, mean size 100.0 MiB",
            "Time writers blocked      :      1.500 s summed over 4 client threads: 0.375 s per \
             thread, 4% of the run",
            "Longest pause, no op done :      250.0 ms (0 idle seconds)",
            "Longest write phase       : log append 240.0 ms, dirty-memory wait 0.0 ms, \
             memtable apply 0.0 ms",
            "Writes slow in a phase    : log append 3, dirty-memory wait 0, memtable apply 0 \
             (over 100 ms)",
            "Commit log                :   64.0 MiB, 10 syncs, mean group 25.0 writes",
            "Peak resident set         :  300.0 MiB (71% of the memory pool below; the rest: heap \
             outside the pool, I/O buffers, code)",
            "Memory pool (configured)  :  420.0 MiB = dirty budget 200.0 MiB + system tables \
             10.0 MiB + row cache share 210.0 MiB",
            "Live heap                 :  120.0 MiB at the end, peak 150.0 MiB; the memory pool \
             took 100.0 MiB of it",
        ] {
            assert!(text.contains(line), "missing {line:?} in\n{text}");
        }
        assert!(
            !text.contains("lagging sync"),
            "shown only when it happened"
        );
        let mut lagging = s.clone();
        lagging.commitlog_lag_waits = 1234;
        assert!(
            lagging
                .to_string()
                .contains("Held for a lagging sync   :      1,234 writes")
        );
        assert!(!text.contains("log room"), "shown only when it happened");
        let mut waited = s.clone();
        waited.commitlog_room_waits = crate::LogRoomWaits {
            budget: 4477,
            rotation: 12,
            size_limit: 0,
            time: Duration::from_millis(1_639_900),
        };
        assert!(waited.to_string().contains(
            "Waited for log room       :   1639.9 s (writes at the buffer budget 4,477, at a segment switch 12, at the size limit 0)"
        ));
        let v = waited.to_json();
        assert_eq!(v["commitlog"]["room_waits"]["budget"], 4477);
        assert_eq!(v["commitlog"]["room_waits"]["segment_switch"], 12);
        assert_eq!(v["commitlog"]["room_waits"]["time_s"], 1639.9);
        let mut no_log = s.clone();
        no_log.commitlog_bytes = 0;
        assert!(!no_log.to_string().contains("Commit log"));
    }

    #[test]
    fn json_holds_every_figure() {
        let v = sample("per-memtable", 1000, 2.0).to_json();
        assert_eq!(v["label"], "per-memtable");
        assert_eq!(v["op_rate"], 100.0);
        assert_eq!(v["latency_ms"]["p99_9"], 4.0);
        assert_eq!(v["total_partitions"], 1000);
        assert_eq!(v["dirty_memory"]["mean_flush_bytes"], 100 << 20);
        assert_eq!(v["longest_pause_ms"], 250.0);
        let phases = &v["write_phases"];
        assert_eq!(phases["slow_threshold_ms"], 100.0);
        assert_eq!(phases["log_append"]["max_ms"], 240.0);
        assert_eq!(phases["log_append"]["slow"], 3);
        assert_eq!(phases["log_append"]["total_s"], 2.0);
        assert_eq!(phases["memtable_apply"]["slow"], 0);
        assert!(v["first_error"].is_null());
        let m = &v["process_memory"];
        assert_eq!(m["peak_resident_bytes"], 300 << 20);
        assert_eq!(m["live_heap_bytes"], 120 << 20);
        assert_eq!(m["peak_live_heap_bytes"], 150 << 20);
        assert_eq!(m["dirty_budget_bytes"], 200 << 20);
        assert_eq!(m["memtable_pool_bytes"], 100 << 20);
        let cache = &v["cache"];
        assert_eq!(cache["enabled"], true);
        assert_eq!(
            (cache["hits"].as_u64(), cache["misses"].as_u64()),
            (Some(900), Some(100))
        );
        assert_eq!(cache["hit_ratio"], 0.9);
        let mut off = sample("x", 1, 1.0);
        off.cache_enabled = false;
        assert!(off.to_json()["cache"]["hit_ratio"].is_null());
        assert!(
            off.to_string()
                .contains("Row cache                 :        off")
        );
        let on = sample("x", 1, 1.0).to_string();
        assert!(
            on.contains("Row cache hit ratio       :      90.0% (900 hits, 100 misses)"),
            "{on}"
        );
        // Unknown figures are null, never 0.
        let mut unknown = sample("x", 1, 1.0);
        unknown.memory = ProcessMemory::default();
        let v = unknown.to_json();
        assert!(v["process_memory"]["peak_resident_bytes"].is_null());
        assert!(v["process_memory"]["live_heap_bytes"].is_null());
        let text = unknown.to_string();
        assert!(
            text.contains("Live heap                 :    not counted"),
            "{text}"
        );
    }

    #[test]
    fn devices_are_reported_with_their_share_of_the_bandwidth() {
        let mut s = sample("x", 10, 1.0);
        assert!(!s.to_string().contains("Device"), "none without a model");
        assert_eq!(s.to_json()["devices"], json!([]));
        // 10 s at 10 MiB/s: 100 MiB of capacity, 75 MiB used.
        let clock: std::sync::Arc<dyn replica::device::Clock> =
            std::sync::Arc::new(replica::device::ManualClock::new());
        let disk = replica::device::Device::with_clock("disk", 10 << 20, 1 << 40, clock).unwrap();
        disk.charge_read(25 << 20);
        disk.charge_write(50 << 20);
        s.devices = vec![disk.stats()];
        let text = s.to_string();
        assert!(
            text.contains(
                "Device disk               : 10.0 MiB/s, read 25.0 MiB, written 50.0 MiB, \
                 75.0% busy, I/O waited 0.0 s (0 waits)"
            ),
            "{text}"
        );
        let d = &s.to_json()["devices"][0];
        assert_eq!(d["name"], "disk");
        assert_eq!(d["bandwidth_bytes_per_s"], 10 << 20);
        assert_eq!(
            (d["bytes_read"].as_u64(), d["bytes_written"].as_u64()),
            (Some(25 << 20), Some(50 << 20))
        );
        assert_eq!(d["utilisation"], 0.75);
        assert_eq!(d["waited_s"], 0.0);
    }

    #[test]
    fn comparison_prints_ratios_of_each_figure() {
        let a = sample("per-memtable", 1000, 4.0);
        let mut b = sample("soft-limit", 1500, 1.0);
        b.flushes = 0;
        b.flushed_bytes = 0;
        let text = compare(&a, &b);
        let line = |name: &str| {
            text.lines()
                .find(|l| l.starts_with(name))
                .unwrap_or_else(|| panic!("no {name} in\n{text}"))
                .to_owned()
        };
        assert!(line("Op rate (op/s)").ends_with("1.50x"), "{text}");
        assert!(
            line("Latency 95th percentile (ms)").ends_with("0.25x"),
            "{text}"
        );
        assert!(line("Flushes").ends_with("0.00x"), "{text}");
        assert!(
            line("Total errors").ends_with('-'),
            "0 against 0 has no ratio\n{text}"
        );
        let v = compare_json(&a, &b);
        assert_eq!(v["ratios"]["Op rate"], 1.5);
        assert!(v["ratios"]["Total errors"].is_null());
        assert_eq!(v["baseline"]["label"], "per-memtable");
    }

    #[test]
    fn json_files_are_written_and_bad_paths_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        let v = sample("x", 10, 1.0).to_json();
        write_json(&path, &v).unwrap();
        let back: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(back, v);
        let bad = dir.path().join("no-such-dir").join("s.json");
        let e = write_json(&bad, &v).unwrap_err().to_string();
        assert!(e.contains("no-such-dir"), "{e}");
    }
}
