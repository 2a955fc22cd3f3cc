//! What a child measures: per-thread latency histograms (no shared lock;
//! merged at the end), per-thread completion marks for the longest stall,
//! the process's CPU time and its peak resident set.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde_json::{Value, json};

use super::Result;

/// Latencies are recorded in nanoseconds, up to an hour.
const MAX_LATENCY_NANOS: u64 = 3_600_000_000_000;

/// One thread's record of a measured phase.
#[derive(Debug)]
pub(crate) struct ThreadRecord {
    latencies: Histogram<u64>,
    /// One bit per millisecond since the phase's start: whether an
    /// operation completed in it.
    completions: Vec<u64>,
    errors: u64,
    first_error: Option<String>,
    checked: u64,
    bad: u64,
    first_bad: Option<String>,
}

impl ThreadRecord {
    pub(crate) fn new(duration: Duration) -> Result<Self> {
        Ok(ThreadRecord {
            latencies: Histogram::new_with_bounds(1, MAX_LATENCY_NANOS, 3)?,
            completions: vec![0; (duration.as_millis() as usize + 1000) / 64 + 1],
            errors: 0,
            first_error: None,
            checked: 0,
            bad: 0,
            first_bad: None,
        })
    }

    /// An operation that started at `began` completed at `ended`.
    pub(crate) fn completed(&mut self, phase: Instant, began: Instant, ended: Instant) {
        let nanos = ended.duration_since(began).as_nanos() as u64;
        self.latencies
            .saturating_record(nanos.clamp(1, MAX_LATENCY_NANOS));
        let ms = ended.duration_since(phase).as_millis() as usize;
        let word = ms / 64;
        if word >= self.completions.len() {
            self.completions.resize(word + 1, 0);
        }
        self.completions[word] |= 1 << (ms % 64);
    }

    /// An operation failed with `e`.
    pub(crate) fn failed(&mut self, e: &dyn std::fmt::Display) {
        self.errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(e.to_string());
        }
    }

    /// A read's value was checked: `bad` is what was wrong, if anything.
    pub(crate) fn checked(&mut self, bad: Option<String>) {
        self.checked += 1;
        if let Some(b) = bad {
            self.bad += 1;
            if self.first_bad.is_none() {
                self.first_bad = Some(b);
            }
        }
    }
}

/// The longest run of milliseconds in `0..end_ms` with no completion.
pub(crate) fn longest_gap(completions: &[u64], end_ms: usize) -> usize {
    let (mut longest, mut current) = (0, 0);
    for ms in 0..end_ms {
        let word = completions.get(ms / 64).copied().unwrap_or(0);
        if word & (1 << (ms % 64)) == 0 {
            current += 1;
            longest = longest.max(current);
        } else {
            current = 0;
        }
    }
    longest
}

/// The process's CPU time so far (user and system, every thread), from
/// `/proc/self/stat`.
pub(crate) fn cpu_seconds() -> Result<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    // The fields after the command name (which may hold spaces) start
    // with the state, field 3; utime and stime are fields 14 and 15.
    let rest = stat
        .rsplit_once(')')
        .ok_or("/proc/self/stat has no command name")?
        .1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| -> Result<u64> {
        Ok(fields
            .get(i)
            .ok_or("/proc/self/stat is too short")?
            .parse::<u64>()?)
    };
    Ok((ticks(11)? + ticks(12)?) as f64 / clock_ticks() as f64)
}

/// Clock ticks per second (`getconf CLK_TCK`; Linux's user-visible HZ,
/// 100, if it cannot be asked).
fn clock_ticks() -> u64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .filter(|&t| t > 0)
        .unwrap_or(100)
}

/// The process's peak resident set (VmHWM), in bytes.
pub(crate) fn peak_rss() -> Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    replica_stress::parse_status(&status)
        .0
        .ok_or_else(|| "/proc/self/status has no VmHWM".into())
}

/// Merges the threads' records of a phase that ran `elapsed` and used
/// `cpu` seconds into the child's result.
pub(crate) fn summarize(records: Vec<ThreadRecord>, elapsed: Duration, cpu: f64) -> Result<Value> {
    let mut latencies = Histogram::<u64>::new_with_bounds(1, MAX_LATENCY_NANOS, 3)?;
    let words = records
        .iter()
        .map(|r| r.completions.len())
        .max()
        .unwrap_or(0);
    let mut completions = vec![0u64; words];
    let (mut errors, mut checked, mut bad) = (0, 0, 0);
    let (mut first_error, mut first_bad) = (None, None);
    for r in records {
        latencies.add(&r.latencies)?;
        for (all, mine) in completions.iter_mut().zip(&r.completions) {
            *all |= mine;
        }
        errors += r.errors;
        checked += r.checked;
        bad += r.bad;
        first_error = first_error.or(r.first_error);
        first_bad = first_bad.or(r.first_bad);
    }
    let ops = latencies.len();
    let micros = |q: f64| latencies.value_at_quantile(q) as f64 / 1000.0;
    Ok(json!({
        "ops": ops,
        "seconds": elapsed.as_secs_f64(),
        "op_rate": ops as f64 / elapsed.as_secs_f64().max(1e-9),
        "cpu_seconds": cpu,
        "cpu_us_per_op": if ops == 0 { 0.0 } else { cpu * 1e6 / ops as f64 },
        "p50_us": micros(0.50),
        "p95_us": micros(0.95),
        "p99_us": micros(0.99),
        "max_us": latencies.max() as f64 / 1000.0,
        "stall_ms": longest_gap(&completions, elapsed.as_millis() as usize),
        "peak_rss": peak_rss()?,
        "errors": errors,
        "first_error": first_error,
        "checked": checked,
        "bad": bad,
        "first_bad": first_bad,
    }))
}
