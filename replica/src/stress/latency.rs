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
    Histogram::new_with_bounds(1, MAX_LATENCY_MICROS, 3).map_err(report_error)
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
    /// The reads' latencies alone (a mixed workload only: `None` when
    /// every operation is of one kind).
    pub read_latency: Option<Histogram<u64>>,
    /// The writes' latencies alone (a mixed workload only).
    pub write_latency: Option<Histogram<u64>>,
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

    /// The reads' 99th-percentile latency in milliseconds, in a mixed
    /// workload (`None` otherwise; 0 with no read in the interval).
    pub fn read_p99_ms(&self) -> Option<f64> {
        self.read_latency
            .as_ref()
            .map(|h| micros_to_ms(h.value_at_quantile(0.99)))
    }

    /// The writes' 99th-percentile latency in milliseconds, in a mixed
    /// workload (`None` otherwise).
    pub fn write_p99_ms(&self) -> Option<f64> {
        self.write_latency
            .as_ref()
            .map(|h| micros_to_ms(h.value_at_quantile(0.99)))
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

/// One thread's records since the last harvest. Its histograms count in
/// `u32` (one interval of one thread never records 4 billion operations
/// in one bucket): at this shape a histogram has about 23,000 counters,
/// so with 100 threads `u64` counters would hold 18 MiB of heap where
/// these hold 9 MiB.
#[derive(Debug)]
struct Slot {
    counts: Counts,
    /// Every operation's latency, or the writes' alone when the reads
    /// have their own.
    latency: Histogram<u32>,
    /// The reads' latencies, when the recorder splits them (a mixed
    /// workload: twice the memory, so only then).
    reads: Option<Histogram<u32>>,
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

/// The latencies of one harvest: of every operation and, when the recorder
/// splits them, of the reads and of the writes.
#[derive(Debug, Clone)]
pub(crate) struct Latencies {
    pub(crate) all: Histogram<u64>,
    pub(crate) reads: Option<Histogram<u64>>,
    pub(crate) writes: Option<Histogram<u64>>,
}

impl Latencies {
    /// Empty histograms; `split`: with the reads' and the writes' too.
    pub(crate) fn new(split: bool) -> Result<Self, Error> {
        Ok(Latencies {
            all: new_histogram()?,
            reads: split.then(new_histogram).transpose()?,
            writes: split.then(new_histogram).transpose()?,
        })
    }

    /// Clears every histogram.
    pub(crate) fn reset(&mut self) {
        self.all.reset();
        self.reads.iter_mut().for_each(Histogram::reset);
        self.writes.iter_mut().for_each(Histogram::reset);
    }

    /// Adds `other`'s records to these.
    pub(crate) fn add(&mut self, other: &Latencies) -> Result<(), Error> {
        fn add(
            to: &mut Option<Histogram<u64>>,
            from: &Option<Histogram<u64>>,
        ) -> Result<(), Error> {
            if let (Some(to), Some(from)) = (to.as_mut(), from.as_ref()) {
                to.add(from).map_err(report_error)?;
            }
            Ok(())
        }
        self.all.add(&other.all).map_err(report_error)?;
        add(&mut self.reads, &other.reads)?;
        add(&mut self.writes, &other.writes)
    }
}

fn report_error(e: impl std::fmt::Display) -> Error {
    Error::Report {
        what: "latency histogram",
        detail: e.to_string(),
    }
}

/// Moves `from`'s records into each of `to` (same shape: a bucket's value
/// lands in the same bucket).
fn move_into(
    from: &mut Histogram<u32>,
    to: &mut [Option<&mut Histogram<u64>>],
) -> Result<(), Error> {
    for v in from.iter_recorded() {
        for h in to.iter_mut().flatten() {
            h.record_n(v.value_iterated_to(), u64::from(v.count_at_value()))
                .map_err(report_error)?;
        }
    }
    from.reset();
    Ok(())
}

impl Recorder {
    /// Slots for `threads` client threads; `split`: the reads' latencies
    /// are also kept apart from the writes'.
    pub(crate) fn new(threads: usize, split: bool) -> Result<Self, Error> {
        let slots = (0..threads)
            .map(|_| {
                Ok(Mutex::new(Slot {
                    counts: Counts::default(),
                    latency: shaped()?,
                    reads: split.then(shaped).transpose()?,
                }))
            })
            .collect::<Result<_, Error>>()?;
        Ok(Recorder { slots })
    }

    /// Empty histograms of this recorder's shape, for [`harvest`](Self::harvest)
    /// (with the reads' and the writes' apart when it splits them).
    pub(crate) fn latencies(&self) -> Result<Latencies, Error> {
        let split = self.slots.first().is_some_and(|s| s.lock().reads.is_some());
        Latencies::new(split)
    }

    /// Records an operation of thread `thread`.
    pub(crate) fn record(&self, thread: usize, outcome: Outcome) {
        let mut slot = self.slots[thread].lock();
        let slot = &mut *slot;
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
        let h = match slot.reads.as_mut() {
            Some(reads) if !outcome.write => reads,
            _ => &mut slot.latency,
        };
        h.saturating_record(micros.max(1));
    }

    /// Moves every thread's records since the last harvest into `into`
    /// (which the caller has cleared, made by [`latencies`](Self::latencies))
    /// and returns their counts.
    pub(crate) fn harvest(&self, into: &mut Latencies) -> Result<Counts, Error> {
        let mut counts = Counts::default();
        for slot in &self.slots {
            let mut slot = slot.lock();
            let slot = &mut *slot;
            counts.add(&slot.counts);
            slot.counts = Counts::default();
            // Unsplit, `into` has no writes' histogram: all operations
            // go to `all` alone.
            move_into(
                &mut slot.latency,
                &mut [Some(&mut into.all), into.writes.as_mut()],
            )?;
            if let Some(reads) = slot.reads.as_mut() {
                move_into(reads, &mut [Some(&mut into.all), into.reads.as_mut()])?;
            }
        }
        Ok(counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn harvest_merges_threads_and_resets_them() {
        let r = Recorder::new(2, false).unwrap();
        let op = |write, ok, rows, ms| Outcome {
            write,
            ok,
            rows,
            latency: Duration::from_millis(ms),
        };
        r.record(0, op(true, true, 4, 1));
        r.record(1, op(false, true, 2, 3));
        r.record(1, op(true, false, 4, 5));
        let mut l = Latencies::new(false).unwrap();
        let c = r.harvest(&mut l).unwrap();
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
        assert_eq!(l.all.len(), 3);
        assert!(l.all.equivalent(l.all.max(), 5000));
        assert!(l.reads.is_none() && l.writes.is_none());
        l.reset();
        assert_eq!(r.harvest(&mut l).unwrap(), Counts::default());
        assert_eq!(l.all.len(), 0);
    }

    #[test]
    fn harvested_histograms_equal_direct_recording() {
        let r = Recorder::new(3, false).unwrap();
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
        let mut l = Latencies::new(false).unwrap();
        r.harvest(&mut l).unwrap();
        let h = l.all;
        assert_eq!(h.len(), direct.len());
        for q in [0.0, 0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(h.value_at_quantile(q), direct.value_at_quantile(q), "{q}");
        }
        assert_eq!(h.max(), direct.max());
        assert_eq!(h.min(), direct.min());
    }

    #[test]
    fn latencies_below_a_microsecond_and_above_an_hour_are_kept() {
        let r = Recorder::new(1, false).unwrap();
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
        let mut l = Latencies::new(false).unwrap();
        r.harvest(&mut l).unwrap();
        let h = l.all;
        assert_eq!(h.len(), 2);
        assert_eq!(h.min(), 1);
        assert!(h.equivalent(h.max(), MAX_LATENCY_MICROS));
    }

    #[test]
    fn a_split_recorder_keeps_reads_and_writes_apart_and_all_of_them_together() {
        let r = Recorder::new(2, true).unwrap();
        let op = |write, ms| Outcome {
            write,
            ok: true,
            rows: 1,
            latency: Duration::from_millis(ms),
        };
        for ms in 1..=10 {
            r.record(0, op(true, ms));
            r.record(1, op(false, 100 * ms));
        }
        let mut l = Latencies::new(true).unwrap();
        let c = r.harvest(&mut l).unwrap();
        assert_eq!((c.writes, c.reads), (10, 10));
        let (reads, writes) = (l.reads.as_ref().unwrap(), l.writes.as_ref().unwrap());
        assert_eq!((l.all.len(), reads.len(), writes.len()), (20, 10, 10));
        assert!(writes.equivalent(writes.max(), 10_000));
        assert!(reads.equivalent(reads.min(), 100_000));
        assert!(reads.equivalent(reads.max(), 1_000_000));
        assert!(l.all.equivalent(l.all.min(), 1000));
        assert!(l.all.equivalent(l.all.max(), 1_000_000));
        // Added to a run's total, and emptied by the harvest.
        let mut total = Latencies::new(true).unwrap();
        total.add(&l).unwrap();
        total.add(&l).unwrap();
        assert_eq!(total.reads.as_ref().unwrap().len(), 20);
        l.reset();
        r.harvest(&mut l).unwrap();
        assert_eq!((l.all.len(), l.reads.unwrap().len()), (0, 0));
    }
}
