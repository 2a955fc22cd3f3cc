//! The runner: client threads issuing the workload's operations against a
//! [`Target`], and the controller that harvests their records once per
//! interval, hands each [`IntervalReport`] to an [`Observer`] (progress
//! line, HdrHistogram log), and builds the [`Summary`] at the end.
//!
//! The controller blocks on a condition variable until the next interval
//! boundary, the end of the run, or the last client thread exiting; it
//! never polls.

use std::time::{Duration, Instant};

use crate::error::Error;
use crate::latency::{IntervalReport, Outcome, Recorder};
use crate::options::{DISK_RESERVE, Mode, StopCondition, StressOptions, WorkloadSpec};
use crate::summary::{LatencySummary, Summary};
use crate::sync::{AtomicBool, AtomicU64, Condvar, Mutex, Ordering};
use crate::target::{Target, TargetStats};
use crate::workload::{Op, OpGenerator, ValuePool, table_name};

/// How one run goes.
#[derive(Debug, Clone, PartialEq)]
pub struct RunConfig {
    /// What the summary calls the run (for `--compare`, the flush policy).
    pub label: String,
    /// The operations.
    pub workload: WorkloadSpec,
    /// Client threads, at least 1.
    pub threads: usize,
    /// When the run stops.
    pub stop: StopCondition,
    /// How often records are harvested and reported (one second in
    /// `replica-stress`).
    pub interval: Duration,
    /// What is sampled of the process's memory at each interval.
    pub memory: crate::MemoryProbe,
    /// Writes each client thread keeps in flight through
    /// [`Target::apply_async`] (`--async`); 0: one blocking write at a time.
    pub async_in_flight: usize,
    /// A request to stop early: the run stops at the next interval and
    /// reports what ran; the populate phase stops between writes.
    pub interrupt: crate::Interrupt,
}

impl RunConfig {
    /// The run `options` describe, reported every second.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] for options out of range.
    pub fn from_options(options: &StressOptions, label: impl Into<String>) -> Result<Self, Error> {
        options.validate()?;
        Ok(RunConfig {
            label: label.into(),
            workload: options.workload()?,
            threads: options.threads,
            stop: options.stop_condition()?,
            interval: Duration::from_secs(1),
            memory: options.memory,
            async_in_flight: options.async_in_flight,
            interrupt: options.interrupt.clone(),
        })
    }
}

/// Receives each interval's report while a run goes on.
pub trait Observer {
    /// Called once per interval, from the controlling thread.
    ///
    /// # Errors
    /// Any error stops the run; [`run`] returns it.
    fn on_interval(&mut self, report: &IntervalReport) -> Result<(), Error>;
}

impl<F: FnMut(&IntervalReport) -> Result<(), Error>> Observer for F {
    fn on_interval(&mut self, report: &IntervalReport) -> Result<(), Error> {
        self(report)
    }
}

/// Calls each observer in turn, stopping at the first error.
#[derive(Debug)]
pub struct Observers<'a> {
    list: Vec<&'a mut dyn Observer>,
}

impl std::fmt::Debug for dyn Observer + '_ {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Observer")
    }
}

impl<'a> Observers<'a> {
    /// An empty list.
    pub fn new() -> Self {
        Observers { list: Vec::new() }
    }

    /// Adds `observer` after the others.
    pub fn push(&mut self, observer: &'a mut dyn Observer) {
        self.list.push(observer);
    }
}

impl Default for Observers<'_> {
    fn default() -> Self {
        Self::new()
    }
}

impl Observer for Observers<'_> {
    fn on_interval(&mut self, report: &IntervalReport) -> Result<(), Error> {
        self.list.iter_mut().try_for_each(|o| o.on_interval(report))
    }
}

/// What the client threads share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) start: Instant,
    pub(crate) stop: AtomicBool,
    /// Operations started, checked against `limit`.
    pub(crate) issued: AtomicU64,
    pub(crate) limit: u64,
    pub(crate) recorder: Recorder,
    /// Nanoseconds from `start` to the latest completion.
    pub(crate) last_done: AtomicU64,
    /// The longest time between two completions (or from the start to
    /// the first), in nanoseconds.
    pub(crate) longest_pause: AtomicU64,
    pub(crate) first_error: Mutex<Option<String>>,
    /// Client threads still running, and the controller's wake-up.
    running: Mutex<usize>,
    changed: Condvar,
}

/// Decrements the running count when a client thread leaves, even by
/// unwinding, so the controller never waits for a thread that is gone.
pub(crate) struct Leaving<'a>(pub(crate) &'a Shared);

impl Drop for Leaving<'_> {
    fn drop(&mut self) {
        let mut running = self.0.running.lock();
        *running -= 1;
        self.0.changed.notify_all();
    }
}

/// What an async client thread needs of the run.
pub(crate) struct ClientArgs<'a> {
    pub(crate) shared: &'a Shared,
    pub(crate) names: &'a [String],
    pub(crate) thread: usize,
    pub(crate) rows_per_write: u64,
}

/// An error and its chain of sources, `outer: inner: ...`, as the reports
/// show the first error and the program its own: the outer message alone
/// often names only the layer ("memtable of table ...", "cannot create
/// lock file ...") and not what went wrong.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        source = inner.source();
    }
    s
}

pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn client<T: Target>(
    target: &T,
    shared: &Shared,
    names: &[String],
    mut generator: OpGenerator,
    thread: usize,
    rows_per_write: u64,
) -> Result<(), Error> {
    let _leaving = Leaving(shared);
    while !shared.stop.load(Ordering::Relaxed) {
        if shared.issued.fetch_add(1, Ordering::Relaxed) >= shared.limit {
            break;
        }
        let op = match generator.next_op() {
            Ok(op) => op,
            Err(e) => {
                shared.stop.store(true, Ordering::Relaxed);
                return Err(e);
            }
        };
        let began = Instant::now();
        let (write, result) = match op {
            Op::Write { table, mutation } => (
                true,
                target
                    .apply(&names[table as usize], mutation)
                    .map(|()| rows_per_write),
            ),
            Op::Read { table, key } => (false, target.read(&names[table as usize], &key)),
        };
        let done = Instant::now();
        let (ok, rows) = match result {
            Ok(rows) => (true, rows),
            Err(e) => {
                let mut first = shared.first_error.lock();
                if first.is_none() {
                    *first = Some(error_chain(&e));
                }
                (false, 0)
            }
        };
        shared.recorder.record(
            thread,
            Outcome {
                write,
                ok,
                rows,
                latency: done - began,
            },
        );
        let at = nanos(done - shared.start);
        let previous = shared.last_done.fetch_max(at, Ordering::Relaxed);
        if at > previous {
            shared
                .longest_pause
                .fetch_max(at - previous, Ordering::Relaxed);
        }
    }
    Ok(())
}

/// Runs the load of `config` against `target`, which must already have the
/// tables [`table_name`]`(0..tables)`. Calls `observer` once per interval
/// and returns the summary.
///
/// Target errors are counted (and the first kept), not fatal, as in
/// cassandra-stress.
///
/// # Errors
/// [`Error::InvalidOption`] for zero threads or a zero interval; the
/// observer's error, which stops the run; [`Error::Mutation`] if the
/// generator fails.
pub fn run<T: Target>(
    target: &T,
    config: &RunConfig,
    observer: &mut dyn Observer,
) -> Result<Summary, Error> {
    if config.threads == 0 {
        return Err(Error::InvalidOption {
            name: "threads",
            value: "0".to_owned(),
            expected: "at least 1 client thread".to_owned(),
        });
    }
    if config.interval.is_zero() {
        return Err(Error::InvalidOption {
            name: "interval",
            value: "0s".to_owned(),
            expected: "a reporting interval of at least 1ns".to_owned(),
        });
    }
    let spec = &config.workload;
    let names: Vec<String> = (0..spec.tables).map(table_name).collect();
    let pool = ValuePool::new(spec);
    let (limit, deadline) = match config.stop {
        StopCondition::Operations(n) => (n, None),
        StopCondition::Duration(d) => (u64::MAX, Some(d)),
    };
    let shared = Shared {
        start: Instant::now(),
        stop: AtomicBool::new(false),
        issued: AtomicU64::new(0),
        limit,
        // A mixed load reports its reads' and writes' latencies apart.
        recorder: Recorder::new(config.threads, spec.mode == Mode::Mixed)?,
        last_done: AtomicU64::new(0),
        longest_pause: AtomicU64::new(0),
        first_error: Mutex::new(None),
        running: Mutex::new(config.threads),
        changed: Condvar::new(),
    };
    let rows_per_write = u64::from(spec.rows_per_partition);
    // The target's counters before the run (a populate phase's work, a
    // reused directory's): the reports count from here.
    let baseline = target.stats();
    std::thread::scope(|scope| {
        let clients: Vec<_> = (0..config.threads)
            .map(|thread| {
                let generator = OpGenerator::new(spec, pool.clone(), thread, config.threads);
                let (shared, names) = (&shared, &names);
                let in_flight = config.async_in_flight;
                scope.spawn(move || {
                    if in_flight > 0 {
                        let c = ClientArgs {
                            shared,
                            names,
                            thread,
                            rows_per_write,
                        };
                        crate::async_client::run(target, &c, generator, in_flight)
                    } else {
                        client(target, shared, names, generator, thread, rows_per_write)
                    }
                })
            })
            .collect();
        let controlled = control(target, &baseline, config, &shared, deadline, observer);
        if controlled.is_err() {
            shared.stop.store(true, Ordering::Relaxed);
        }
        let mut result = controlled;
        for c in clients {
            match c.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    if result.is_ok() {
                        result = Err(e);
                    }
                }
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        result
    })
}

/// What [`Summary::stopped_early`] says of a run an [`Interrupt`](crate::Interrupt)
/// stopped.
pub(crate) const INTERRUPTED: &str =
    "interrupted (SIGINT or SIGTERM): the figures cover the part that ran";

/// Why a run must stop, if the data directory `free` names has less than
/// [`DISK_RESERVE`] bytes available.
pub(crate) fn disk_running_out(free: Option<(std::path::PathBuf, u64)>) -> Option<String> {
    let (dir, available) = free?;
    (available < DISK_RESERVE).then(|| {
        format!(
            "data directory {} has {available} B available, below the {DISK_RESERVE} B \
             reserve: the run stopped before the disk filled",
            dir.display()
        )
    })
}

/// What the populate phase did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PopulateReport {
    /// Partitions written (the whole population).
    pub partitions: u64,
    /// Bytes of values written.
    pub bytes: u64,
    /// How long it took, the final flush included.
    pub elapsed: Duration,
    /// The target's figures of the phase alone (its flushes, commit log,
    /// waits: [`TargetStats::since`] the phase began), which the run that
    /// follows does not count.
    pub stats: TargetStats,
}

/// The populate phase: writes every partition of the population of
/// `config` once (`config.threads` threads, each a share of the indices),
/// then flushes the target, so the run that follows reads data that is
/// there, from the target's files (and its cache).
///
/// # Errors
/// The first write or flush error ([`Error::Report`] naming it), since a
/// run over a partial population would measure something else;
/// [`Error::Mutation`] if the generator fails; [`Error::Interrupted`] if
/// `config.interrupt` asks to stop.
pub fn populate<T: Target>(target: &T, config: &RunConfig) -> Result<PopulateReport, Error> {
    let spec = &config.workload;
    let names: Vec<String> = (0..spec.tables).map(table_name).collect();
    let pool = ValuePool::new(spec);
    let threads = config.threads.max(1) as u64;
    let before = target.stats();
    let started = Instant::now();
    let failed = |e: &dyn std::fmt::Display| Error::Report {
        what: "populate phase",
        detail: e.to_string(),
    };
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|thread| {
                let mut generator =
                    OpGenerator::new(spec, pool.clone(), thread as usize, config.threads);
                let names = &names;
                scope.spawn(move || -> Result<(), Error> {
                    let mut index = thread;
                    while index < spec.partitions {
                        if config.interrupt.is_requested() {
                            return Err(Error::Interrupted {
                                during: "populate phase",
                            });
                        }
                        if let Op::Write { table, mutation } = generator.population_write(index)? {
                            target
                                .apply(&names[table as usize], mutation)
                                .map_err(|e| failed(&e))?;
                        }
                        index += threads;
                    }
                    Ok(())
                })
            })
            .collect();
        workers.into_iter().try_for_each(|w| match w.join() {
            Ok(result) => result,
            Err(panic) => std::panic::resume_unwind(panic),
        })
    })?;
    target.flush().map_err(|e| failed(&e))?;
    Ok(PopulateReport {
        partitions: spec.partitions,
        bytes: spec
            .partitions
            .saturating_mul(u64::from(spec.rows_per_partition) * u64::from(spec.row_size)),
        elapsed: started.elapsed(),
        stats: target.stats().since(&before),
    })
}

/// The controller: harvests every interval until the clients are gone.
fn control<T: Target>(
    target: &T,
    baseline: &TargetStats,
    config: &RunConfig,
    shared: &Shared,
    deadline: Option<Duration>,
    observer: &mut dyn Observer,
) -> Result<Summary, Error> {
    let start = shared.start;
    let mut total = shared.recorder.latencies()?;
    let mut interval = shared.recorder.latencies()?;
    let mut counts = crate::latency::Counts::default();
    let mut index = 0u64;
    let mut interval_start = Duration::ZERO;
    let mut next_tick = start + config.interval;
    let mut peak_real_dirty = 0u64;
    let mut idle_intervals = 0u64;
    let mut failure: Option<Error> = None;
    let mut stopped_early: Option<String> = None;
    let mut stats = target.stats().since(baseline);
    let mut memory = config.memory.sample();
    let mut running = shared.running.lock();
    loop {
        let stopping = shared.stop.load(Ordering::Relaxed);
        let wake = match deadline {
            Some(d) if !stopping => next_tick.min(start + d),
            _ => next_tick,
        };
        while *running > 0 && Instant::now() < wake {
            shared.changed.wait_until(&mut running, wake);
        }
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= start + d) {
            shared.stop.store(true, Ordering::Relaxed);
        }
        let finished = *running == 0;
        if now < next_tick && !finished {
            continue;
        }
        // Harvest without holding the lock clients need to leave.
        drop(running);
        let outcome = (|| -> Result<(), Error> {
            interval.reset();
            let c = shared.recorder.harvest(&mut interval)?;
            stats = target.stats().since(baseline);
            if stopped_early.is_none() && config.interrupt.is_requested() {
                shared.stop.store(true, Ordering::Relaxed);
                stopped_early = Some(INTERRUPTED.to_owned());
            }
            if stopped_early.is_none()
                && let Some(why) = disk_running_out(target.free_space())
            {
                // A warning and a stop, not a run of failing writes.
                shared.stop.store(true, Ordering::Relaxed);
                stopped_early = Some(why);
            }
            let now_memory = config.memory.sample();
            memory = memory.merge_peaks(now_memory);
            let report = IntervalReport {
                index,
                start: interval_start,
                length: (now - start).saturating_sub(interval_start),
                counts: c,
                latency: interval.all.clone(),
                read_latency: interval.reads.clone(),
                write_latency: interval.writes.clone(),
                stats,
                memory: now_memory,
                devices: target.devices(),
            };
            total.add(&interval)?;
            counts.ops += c.ops;
            counts.writes += c.writes;
            counts.reads += c.reads;
            counts.errors += c.errors;
            counts.partitions += c.partitions;
            counts.rows += c.rows;
            counts.rows_read += c.rows_read;
            peak_real_dirty = peak_real_dirty
                .max(stats.real_dirty)
                .max(stats.peak_real_dirty);
            // The last interval may be a short tail after the clients
            // stopped; every earlier one is a whole tick.
            if c.ops == 0 && !finished {
                idle_intervals += 1;
            }
            interval_start = now - start;
            index += 1;
            if failure.is_none() {
                observer.on_interval(&report)?;
            }
            Ok(())
        })();
        running = shared.running.lock();
        if let Err(e) = outcome {
            shared.stop.store(true, Ordering::Relaxed);
            failure.get_or_insert(e);
        }
        if finished {
            break;
        }
        while next_tick <= now {
            next_tick += config.interval;
        }
    }
    drop(running);
    if let Some(e) = failure {
        return Err(e);
    }
    let elapsed = interval_start;
    let first_error = shared.first_error.lock().take();
    Ok(Summary {
        label: config.label.clone(),
        counts,
        elapsed,
        latency: LatencySummary::from_histogram(&total.all),
        read_latency: total.reads.as_ref().map(LatencySummary::from_histogram),
        write_latency: total.writes.as_ref().map(LatencySummary::from_histogram),
        peak_real_dirty,
        dirty_budget: stats.dirty_budget,
        flushes: stats.flushes,
        flushed_bytes: stats.flushed_bytes,
        writers_blocked: stats.writers_blocked,
        commitlog_bytes: stats.commitlog_bytes,
        compaction: stats.compaction,
        commitlog_syncs: stats.commitlog_syncs,
        commitlog_synced_entries: stats.commitlog_synced_entries,
        commitlog_lag_waits: stats.commitlog_lag_waits,
        commitlog_room_waits: stats.commitlog_room_waits,
        longest_pause: Duration::from_nanos(shared.longest_pause.load(Ordering::Relaxed)),
        write_phases: stats.write_phases,
        idle_intervals,
        first_error,
        stopped_early,
        memory: memory.merge_peaks(config.memory.sample()),
        memtable_pool_bytes: stats.memtable_pool_bytes,
        memory_pool_limit: stats.memory_pool_limit,
        system_dirty_budget: stats.system_dirty_budget,
        cache_share: stats.cache_share,
        threads: config.threads,
        cache_enabled: stats.cache_enabled,
        cache_hits: stats.cache_hits,
        cache_misses: stats.cache_misses,
        devices: target.devices(),
    })
}

#[cfg(test)]
mod tests {
    use super::error_chain;

    #[derive(Debug, thiserror::Error)]
    #[error("pool out of memory")]
    struct Inner;

    #[derive(Debug, thiserror::Error)]
    #[error("memtable of table \"t\"")]
    struct Outer(#[source] Inner);

    #[test]
    fn the_first_error_names_its_whole_chain() {
        assert_eq!(
            error_chain(&Outer(Inner)),
            "memtable of table \"t\": pool out of memory"
        );
        assert_eq!(error_chain(&Inner), "pool out of memory");
    }
}
