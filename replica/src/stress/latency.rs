//! Latency and throughput recording: one slot per client thread, harvested
//! into an interval report once per interval.
//!
//! Each thread records into its own histogram behind its own lock, which
//! only the reporter also takes, once per interval: writers never contend
//! with each other.

use std::time::Duration;

use hdrhistogram::Histogram;

use crate::error::Error;
use crate::stress::target::TargetStats;
use crate::sync::Mutex;

/// Latencies are recorded in microseconds, from 1 µs to one hour at three
/// significant figures (slower operations saturate at the top).
pub const LATENCY_UNIT: &str = "microseconds";
const MAX_LATENCY_MICROS: u64 = 3_600_000_000;

/// A fresh latency histogram of the recorder's shape.
pub(crate) fn new_histogram() -> Result<Histogram<u64>, Error> {
    shaped()
}

/// A histogram of the recorder's shape with counters of type `T`.
fn shaped<T: hdrhistogram::Counter>() -> Result<Histogram<T>, Error> {
    Histogram::new_with_bounds(1, MAX_LATENCY_MICROS, 3).map_err(|e| Error::Report {
        what: "latency histogram",
        detail: e.to_string(),
    })
}

/// Counts of one interval (or of a whole run).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Completed operations, failed ones included.
    pub ops: u64,
    /// Completed writes.
    pub writes: u64,
    /// Completed reads.
    pub reads: u64,
    /// Operations that returned an error.
    pub errors: u64,
    /// Partitions written or read by successful operations.
    pub partitions: u64,
    /// Rows written or read by successful operations.
    pub rows: u64,
}

impl Counts {
    fn add(&mut self, other: &Counts) {
        self.ops += other.ops;
        self.writes += other.writes;
        self.reads += other.reads;
        self.errors += other.errors;
        self.partitions += other.partitions;
        self.rows += other.rows;
    }
}

/// What happened during one interval of a run.
#[derive(Debug, Clone)]
pub struct IntervalReport {
    /// 0 for the first interval.
    pub index: u64,
    /// When the interval started, since the run started.
    pub start: Duration,
    /// How long it lasted (the last one may be short).
    pub length: Duration,
    /// Operations completed in it.
    pub counts: Counts,
    /// Latencies of the operations completed in it, in microseconds.
    pub latency: Histogram<u64>,
    /// The target's figures at its end.
    pub stats: TargetStats,
    /// The process's memory at its end.
    pub memory: crate::stress::ProcessMemory,
    /// The target's modelled devices at its end (counters since the run
    /// started; empty without a model).
    pub devices: Vec<device::DeviceStats>,
}

impl IntervalReport {
    /// Operations per second over the interval.
    pub fn ops_per_second(&self) -> f64 {
        per_second(self.counts.ops, self.length)
    }

    /// The 99th-percentile latency in milliseconds (0 with no operation).
    pub fn p99_ms(&self) -> f64 {
        micros_to_ms(self.latency.value_at_quantile(0.99))
    }
}

/// `count` per second over `d` (0 for an empty duration).
pub(crate) fn per_second(count: u64, d: Duration) -> f64 {
    let secs = d.as_secs_f64();
    if secs > 0.0 { count as f64 / secs } else { 0.0 }
}

pub(crate) fn micros_to_ms(micros: u64) -> f64 {
    micros as f64 / 1000.0
}

/// One thread's records since the last harvest. Its histogram counts in
/// `u32` (one interval of one thread never records 4 billion operations
/// in one bucket): at this shape a histogram has about 23,000 counters,
/// so with 100 threads `u64` counters would hold 18 MiB of heap where
/// these hold 9 MiB.
#[derive(Debug)]
struct Slot {
    counts: Counts,
    latency: Histogram<u32>,
}

/// The per-thread recording slots of a run.
#[derive(Debug)]
pub(crate) struct Recorder {
    slots: Vec<Mutex<Slot>>,
}

/// What one operation did, for [`Recorder::record`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Outcome {
    pub(crate) write: bool,
    pub(crate) ok: bool,
    pub(crate) rows: u64,
    pub(crate) latency: Duration,
}

impl Recorder {
    pub(crate) fn new(threads: usize) -> Result<Self, Error> {
        let slots = (0..threads)
            .map(|_| {
                Ok(Mutex::new(Slot {
                    counts: Counts::default(),
                    latency: shaped()?,
                }))
            })
            .collect::<Result<_, Error>>()?;
        Ok(Recorder { slots })
    }

    /// Records an operation of thread `thread`.
    pub(crate) fn record(&self, thread: usize, outcome: Outcome) {
        let mut slot = self.slots[thread].lock();
        let c = &mut slot.counts;
        c.ops += 1;
        if outcome.write {
            c.writes += 1;
        } else {
            c.reads += 1;
        }
        if outcome.ok {
            c.partitions += 1;
            c.rows += outcome.rows;
        } else {
            c.errors += 1;
        }
        let micros = u64::try_from(outcome.latency.as_micros()).unwrap_or(u64::MAX);
        slot.latency.saturating_record(micros.max(1));
    }

    /// Moves every thread's records since the last harvest into `latency`
    /// (which the caller has cleared) and returns their counts.
    pub(crate) fn harvest(&self, latency: &mut Histogram<u64>) -> Result<Counts, Error> {
        let mut counts = Counts::default();
        for slot in &self.slots {
            let mut slot = slot.lock();
            counts.add(&slot.counts);
            for v in slot.latency.iter_recorded() {
                // Same shape: the bucket's value lands in the same bucket.
                latency
                    .record_n(v.value_iterated_to(), u64::from(v.count_at_value()))
                    .map_err(|e| Error::Report {
                        what: "latency histogram",
                        detail: e.to_string(),
                    })?;
            }
            slot.counts = Counts::default();
            slot.latency.reset();
        }
        Ok(counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn harvest_merges_threads_and_resets_them() {
        let r = Recorder::new(2).unwrap();
        let op = |write, ok, rows, ms| Outcome {
            write,
            ok,
            rows,
            latency: Duration::from_millis(ms),
        };
        r.record(0, op(true, true, 4, 1));
        r.record(1, op(false, true, 2, 3));
        r.record(1, op(true, false, 4, 5));
        let mut h = new_histogram().unwrap();
        let c = r.harvest(&mut h).unwrap();
        assert_eq!(
            c,
            Counts {
                ops: 3,
                writes: 2,
                reads: 1,
                errors: 1,
                partitions: 2,
                rows: 6
            }
        );
        assert_eq!(h.len(), 3);
        assert!(h.equivalent(h.max(), 5000));
        h.reset();
        assert_eq!(r.harvest(&mut h).unwrap(), Counts::default());
        assert_eq!(h.len(), 0);
    }

    #[test]
    fn harvested_histograms_equal_direct_recording() {
        let r = Recorder::new(3).unwrap();
        let mut direct = new_histogram().unwrap();
        let mut x = 7u64;
        for i in 0..5000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let micros = 1 + (x >> 40) % 5_000_000;
            r.record(
                i % 3,
                Outcome {
                    write: true,
                    ok: true,
                    rows: 1,
                    latency: Duration::from_micros(micros),
                },
            );
            direct.record(micros).unwrap();
        }
        let mut h = new_histogram().unwrap();
        r.harvest(&mut h).unwrap();
        assert_eq!(h.len(), direct.len());
        for q in [0.0, 0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(h.value_at_quantile(q), direct.value_at_quantile(q), "{q}");
        }
        assert_eq!(h.max(), direct.max());
        assert_eq!(h.min(), direct.min());
    }

    #[test]
    fn latencies_below_a_microsecond_and_above_an_hour_are_kept() {
        let r = Recorder::new(1).unwrap();
        for latency in [Duration::ZERO, Duration::from_secs(7200)] {
            r.record(
                0,
                Outcome {
                    write: true,
                    ok: true,
                    rows: 1,
                    latency,
                },
            );
        }
        let mut h = new_histogram().unwrap();
        r.harvest(&mut h).unwrap();
        assert_eq!(h.len(), 2);
        assert_eq!(h.min(), 1);
        assert!(h.equivalent(h.max(), MAX_LATENCY_MICROS));
    }
}
