//! Latency and throughput recording: one slot per client thread, harvested
//! into an interval report once per interval.
//!
//! Each thread records into its own small slot behind its own lock, which
//! only the reporter also takes, once per interval; a thread whose slot
//! fills (every 256 operations) moves it into one shared set of histograms,
//! so writers rarely contend, and memory does not grow with the thread
//! count by a histogram per thread.

use std::time::Duration;

use hdrhistogram::Histogram;

use crate::error::Error;
use crate::sync::Mutex;
use crate::target::TargetStats;

/// Latencies are recorded in microseconds, from 1 µs to one hour at three
/// significant figures (slower operations saturate at the top).
pub const LATENCY_UNIT: &str = "microseconds";
const MAX_LATENCY_MICROS: u64 = 3_600_000_000;

/// A fresh latency histogram of the recorder's shape.
pub(crate) fn new_histogram() -> Result<Histogram<u64>, Error> {
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
    /// Of those, the rows successful reads found (0 when every read
    /// missed: a `read` of a directory holding no data).
    pub rows_read: u64,
}

impl Counts {
    fn add(&mut self, other: &Counts) {
        self.ops += other.ops;
        self.writes += other.writes;
        self.reads += other.reads;
        self.errors += other.errors;
        self.partitions += other.partitions;
        self.rows += other.rows;
        self.rows_read += other.rows_read;
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
    pub memory: crate::ProcessMemory,
    /// The target's modelled devices at its end (counters since the run
    /// started; empty without a model).
    pub devices: Vec<replica::device::DeviceStats>,
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

/// How many operations a thread keeps before moving them into the
/// recorder's shared histograms.
const SAMPLES_PER_SLOT: usize = 256;

/// Marks a read's latency in [`Slot::samples`] (latencies are below 2^63
/// microseconds).
const READ: u64 = 1 << 63;

/// One thread's operations not yet moved into the shared histograms: their
/// counts and latencies (microseconds, at least 1; a read's marked with
/// [`READ`]).
///
/// A slot keeps raw latencies, not a histogram of its own: at this shape a
/// histogram has about 23,000 counters, so with 100 threads per-thread
/// histograms held 9 MiB of heap (`u32` counters; 18 MiB with `u64`)
/// where these slots hold 200 KiB (issue 19's memory shape).
#[derive(Debug)]
struct Slot {
    counts: Counts,
    samples: Vec<u64>,
}

/// Operations moved out of the slots since the last harvest.
#[derive(Debug)]
struct Merged {
    counts: Counts,
    latencies: Latencies,
}

/// The per-thread recording slots of a run, and the histograms full slots
/// move into.
///
/// An operation is always in exactly one place, its counts and latency
/// together: its thread's slot, or (once the slot filled up) the shared
/// histograms, moved with both locks held (slot, then shared). A harvest
/// takes one lock at a time, the slots then the shared histograms, so
/// whatever moves meanwhile is taken once, with its counts.
#[derive(Debug)]
pub(crate) struct Recorder {
    slots: Vec<Mutex<Slot>>,
    merged: Mutex<Merged>,
    split: bool,
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

    /// Records a slot's latencies, each in `all` and, split, in the reads'
    /// or the writes' histogram (unsplit there are none: every operation
    /// goes to `all` alone). Slower operations saturate at the top.
    fn record_samples(&mut self, samples: &[u64]) {
        for &sample in samples {
            let micros = sample & !READ;
            self.all.saturating_record(micros);
            let h = if sample & READ != 0 {
                self.reads.as_mut()
            } else {
                self.writes.as_mut()
            };
            if let Some(h) = h {
                h.saturating_record(micros);
            }
        }
    }
}

fn report_error(e: impl std::fmt::Display) -> Error {
    Error::Report {
        what: "latency histogram",
        detail: e.to_string(),
    }
}

impl Recorder {
    /// Slots for `threads` client threads; `split`: the reads' latencies
    /// are also kept apart from the writes'.
    pub(crate) fn new(threads: usize, split: bool) -> Result<Self, Error> {
        let slots = (0..threads)
            .map(|_| {
                Mutex::new(Slot {
                    counts: Counts::default(),
                    samples: Vec::with_capacity(SAMPLES_PER_SLOT),
                })
            })
            .collect();
        Ok(Recorder {
            slots,
            merged: Mutex::new(Merged {
                counts: Counts::default(),
                latencies: Latencies::new(split)?,
            }),
            split,
        })
    }

    /// Empty histograms of this recorder's shape, for [`harvest`](Self::harvest)
    /// (with the reads' and the writes' apart when it splits them).
    pub(crate) fn latencies(&self) -> Result<Latencies, Error> {
        Latencies::new(self.split)
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
            if !outcome.write {
                c.rows_read += outcome.rows;
            }
        } else {
            c.errors += 1;
        }
        let micros = u64::try_from(outcome.latency.as_micros())
            .unwrap_or(u64::MAX)
            .clamp(1, READ - 1);
        let tag = if self.split && !outcome.write {
            READ
        } else {
            0
        };
        slot.samples.push(micros | tag);
        if slot.samples.len() >= SAMPLES_PER_SLOT {
            // The slot's operations move, counts and latencies together.
            let mut merged = self.merged.lock();
            merged.counts.add(&slot.counts);
            slot.counts = Counts::default();
            merged.latencies.record_samples(&slot.samples);
            slot.samples.clear();
        }
    }

    /// Moves every operation recorded since the last harvest into `into`
    /// (which the caller has cleared, made by [`latencies`](Self::latencies))
    /// and returns their counts.
    pub(crate) fn harvest(&self, into: &mut Latencies) -> Result<Counts, Error> {
        let mut counts = Counts::default();
        for slot in &self.slots {
            let mut slot = slot.lock();
            counts.add(&slot.counts);
            slot.counts = Counts::default();
            into.record_samples(&slot.samples);
            slot.samples.clear();
        }
        let mut merged = self.merged.lock();
        counts.add(&merged.counts);
        merged.counts = Counts::default();
        into.add(&merged.latencies)?;
        merged.latencies.reset();
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
                rows: 6,
                rows_read: 2,
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

    /// Threads record while the reporter harvests: every harvest holds
    /// each of its operations' counts and latency together (a slot moving
    /// into the shared histograms mid-harvest is taken once, whole), and
    /// the harvests together hold every operation once. One harvest is
    /// taken by construction while every thread stands halfway (it holds
    /// exactly the first halves); the others race the recorders.
    #[test]
    fn harvests_racing_recorders_take_every_operation_once_and_whole() {
        const THREADS: usize = 4;
        const OPS: u64 = 20_000;
        let r = std::sync::Arc::new(Recorder::new(THREADS, true).unwrap());
        let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        // Met twice: once the first halves are recorded, and once the
        // harvest of them is taken.
        let halfway = std::sync::Arc::new(std::sync::Barrier::new(THREADS + 1));
        let record = |r: &Recorder, t: usize, i: u64| {
            r.record(
                t,
                Outcome {
                    write: !i.is_multiple_of(3),
                    ok: true,
                    rows: 1,
                    latency: Duration::from_micros(1 + i % 1000),
                },
            );
        };
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (r, done, halfway) = (
                    std::sync::Arc::clone(&r),
                    std::sync::Arc::clone(&done),
                    std::sync::Arc::clone(&halfway),
                );
                std::thread::spawn(move || {
                    for i in 0..OPS / 2 {
                        record(&r, t, i);
                    }
                    halfway.wait();
                    halfway.wait();
                    for i in OPS / 2..OPS {
                        record(&r, t, i);
                    }
                    done.fetch_add(1, std::sync::atomic::Ordering::Release);
                })
            })
            .collect();
        let mut total = Counts::default();
        let mut harvests = 0;
        let mut l = r.latencies().unwrap();
        let mut harvest = |total: &mut Counts| {
            l.reset();
            let c = r.harvest(&mut l).unwrap();
            let (reads, writes) = (l.reads.as_ref().unwrap(), l.writes.as_ref().unwrap());
            assert_eq!(l.all.len(), c.ops, "harvest {harvests}");
            assert_eq!((reads.len(), writes.len()), (c.reads, c.writes));
            total.add(&c);
            harvests += 1;
            c
        };
        halfway.wait();
        let first = harvest(&mut total);
        assert_eq!(
            first.ops,
            THREADS as u64 * OPS / 2,
            "the first halves, whole"
        );
        halfway.wait();
        loop {
            let finished = done.load(std::sync::atomic::Ordering::Acquire) == THREADS;
            harvest(&mut total);
            if finished {
                break;
            }
        }
        for w in workers {
            w.join().unwrap();
        }
        let all = THREADS as u64 * OPS;
        assert_eq!((total.ops, total.rows), (all, all));
        assert_eq!(total.reads, THREADS as u64 * OPS.div_ceil(3));
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
