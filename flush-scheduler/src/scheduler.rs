//! The scheduler: queue, coalescing, worker pool, retries, shutdown.

use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::time::Instant;

use crate::config::{RetryPolicy, SchedulerConfig};
use crate::directories::{self, Directories};
use crate::error::FlushError;
use crate::handle::{Completion, FlushHandle, FlushResult};
use crate::job::{FlushContext, FlushJob, FlushOutput, FlushReport, JobKey, ProgressListener};
use crate::metrics::FlushMetrics;
use crate::sync::{Arc, Condvar, Mutex, PlainArc, thread};

#[cfg(all(test, loom))]
mod loom_models;

/// A job between submission and resolution. `job` is `Some` while it is
/// queued or backing off and `None` while a worker runs it.
struct Entry {
    job: Option<Box<dyn FlushJob>>,
    completion: Arc<Completion>,
    failures: u32,
}

struct State {
    entries: HashMap<JobKey, Entry>,
    ready: VecDeque<JobKey>,
    /// Jobs backing off after a failure, earliest retry first.
    backing_off: BinaryHeap<Reverse<(Instant, JobKey)>>,
    running: usize,
    shutting_down: bool,
    dirs: Directories,
    /// Jobs that gave up or failed during shutdown, kept for the caller.
    abandoned: Vec<Box<dyn FlushJob>>,
    metrics: FlushMetrics,
}

/// State shared by the scheduler and its workers.
pub(crate) struct Shared {
    state: Mutex<State>,
    /// Workers wait here for work, a retry deadline or shutdown.
    work: Condvar,
    /// Shutdown waits here for running jobs to finish.
    idle: Condvar,
    retry: RetryPolicy,
    listener: Option<PlainArc<dyn ProgressListener>>,
}

impl Shared {
    /// Accounts bytes written by a running attempt.
    pub(crate) fn record_written(&self, key: JobKey, dir: usize, bytes: u64) {
        {
            let mut st = self.state.lock();
            st.metrics.bytes_written = st.metrics.bytes_written.saturating_add(bytes);
            st.dirs.written(dir, bytes);
        }
        if let Some(listener) = &self.listener {
            listener.on_written(key, bytes);
        }
    }
}

/// A job submission that was not accepted: the scheduler is shut down. The
/// job is handed back, so nothing it holds is lost.
pub struct Rejected {
    /// Why the job was rejected ([`FlushError::ShutDown`]).
    pub error: FlushError,
    /// The job, untouched.
    pub job: Box<dyn FlushJob>,
}

impl fmt::Debug for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rejected")
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

/// Runs flush jobs on a bounded pool of worker threads.
///
/// * **Bounded**: at most [`SchedulerConfig::workers`] jobs run at once;
///   the rest wait in a FIFO queue.
/// * **Coalescing**: submitting a job whose key is already queued, running
///   or waiting for a retry returns a handle to that flush; the duplicate
///   job object is dropped (the job already in the scheduler owns the same
///   memtable and will flush it).
/// * **Directories**: each attempt gets a flush directory, round-robin,
///   skipping directories that failed recently (see
///   [`SchedulerConfig::directory_cooldown`]).
/// * **Retries**: a failed attempt is retried with exponential backoff
///   ([`RetryPolicy`]); the job object, and so its memtable, stays in the
///   scheduler until it succeeds. Workers wait for backoffs on a condition
///   variable, so they never sleep and shutdown interrupts the wait. A job
///   whose owner retries by itself opts out
///   ([`FlushJob::retry_on_failure`]).
/// * **Shutdown** ([`shutdown`](Self::shutdown)) waits for running jobs,
///   cancels queued ones and hands their job objects back.
///
/// Dropping the scheduler shuts it down and drops the handed-back jobs:
/// call [`shutdown`](Self::shutdown) first to keep them.
pub struct FlushScheduler {
    shared: Arc<Shared>,
    workers: Mutex<Vec<thread::JoinHandle<()>>>,
}

impl fmt::Debug for FlushScheduler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FlushScheduler")
            .field("metrics", &self.metrics())
            .finish_non_exhaustive()
    }
}

impl FlushScheduler {
    /// Validates `config` (worker count, backoff bounds, and that every
    /// flush directory exists, is a directory and is writable) and starts
    /// the workers.
    pub fn new(config: SchedulerConfig) -> Result<Self, FlushError> {
        config.validate_settings()?;
        directories::validate(&config.flush_dirs)?;
        Self::start(config)
    }

    /// Starts the workers without touching the file system (loom models).
    pub(crate) fn start(config: SchedulerConfig) -> Result<Self, FlushError> {
        config.validate_settings()?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                entries: HashMap::new(),
                ready: VecDeque::new(),
                backing_off: BinaryHeap::new(),
                running: 0,
                shutting_down: false,
                dirs: Directories::new(config.flush_dirs, config.directory_cooldown),
                abandoned: Vec::new(),
                metrics: FlushMetrics::default(),
            }),
            work: Condvar::new(),
            idle: Condvar::new(),
            retry: config.retry,
            listener: config.listener,
        });
        let scheduler = Self {
            shared,
            workers: Mutex::new(Vec::with_capacity(config.workers)),
        };
        for index in 0..config.workers {
            let shared = Arc::clone(&scheduler.shared);
            let spawned = thread::spawn_named(format!("flush-worker-{index}"), move || {
                worker(&shared);
            });
            match spawned {
                Ok(handle) => scheduler.workers.lock().push(handle),
                Err(e) => {
                    // Dropping `scheduler` stops the workers already started.
                    return Err(FlushError::WorkerSpawn {
                        index,
                        source: PlainArc::new(e),
                    });
                }
            }
        }
        Ok(scheduler)
    }

    /// Submits `job`. Returns a handle to its flush, or to the flush already
    /// queued, running or backing off for the same key (the new job object
    /// is then dropped). After shutdown the job is handed back in
    /// [`Rejected`].
    pub fn submit(&self, job: Box<dyn FlushJob>) -> Result<FlushHandle, Rejected> {
        let key = job.key();
        let mut st = self.shared.state.lock();
        if st.shutting_down {
            return Err(Rejected {
                error: FlushError::ShutDown { key },
                job,
            });
        }
        if let Some(entry) = st.entries.get(&key) {
            let handle = FlushHandle::new(key, Arc::clone(&entry.completion));
            st.metrics.coalesced += 1;
            drop(st);
            drop(job);
            return Ok(handle);
        }
        let completion = Completion::new();
        st.entries.insert(
            key,
            Entry {
                job: Some(job),
                completion: Arc::clone(&completion),
                failures: 0,
            },
        );
        st.ready.push_back(key);
        st.metrics.submitted += 1;
        drop(st);
        self.shared.work.notify_one();
        Ok(FlushHandle::new(key, completion))
    }

    /// A snapshot of the counters.
    pub fn metrics(&self) -> FlushMetrics {
        let st = self.shared.state.lock();
        let mut m = st.metrics.clone();
        m.queued = st.ready.len();
        m.running = st.running;
        m.backing_off = st.backing_off.len();
        m.directories = st.dirs.metrics(Instant::now());
        m
    }

    /// Takes the job objects that gave up after
    /// [`RetryPolicy::max_attempts`] failures, so their memtables can be
    /// kept or resubmitted.
    pub fn take_abandoned(&self) -> Vec<Box<dyn FlushJob>> {
        std::mem::take(&mut self.shared.state.lock().abandoned)
    }

    /// Shuts down: rejects new submissions, cancels queued and backing-off
    /// jobs (their handles resolve with [`FlushError::Cancelled`] at once),
    /// waits for running jobs to finish, and stops the workers.
    ///
    /// Returns every job object the scheduler still holds: the cancelled
    /// ones, running ones whose last attempt failed (also resolved as
    /// `Cancelled`; no retry is started during shutdown), and ones that gave
    /// up and were not yet taken. No memtable is dropped by the scheduler.
    /// Calling it again returns an empty list.
    pub fn shutdown(&self) -> Vec<Box<dyn FlushJob>> {
        let mut cancelled = Vec::new();
        let mut st = self.shared.state.lock();
        st.shutting_down = true;
        st.ready.clear();
        st.backing_off.clear();
        st.entries.retain(|key, entry| match entry.job.take() {
            // Queued or backing off: cancel. Running entries have no job.
            Some(job) => {
                cancelled.push((*key, entry.failures, Arc::clone(&entry.completion), job));
                false
            }
            None => true,
        });
        st.metrics.cancelled += cancelled.len() as u64;
        self.shared.work.notify_all();
        drop(st);
        let mut jobs = Vec::with_capacity(cancelled.len());
        for (key, failures, completion, job) in cancelled {
            completion.resolve(failures, Err(FlushError::Cancelled { key }));
            jobs.push(job);
        }
        let mut st = self.shared.state.lock();
        while st.running > 0 {
            self.shared.idle.wait(&mut st);
        }
        jobs.append(&mut st.abandoned);
        drop(st);
        let workers = std::mem::take(&mut *self.workers.lock());
        for worker in workers {
            // A worker that panicked has already lost its job's state; the
            // panic is not propagated into shutdown.
            let _ = worker.join();
        }
        jobs
    }
}

impl Drop for FlushScheduler {
    fn drop(&mut self) {
        drop(self.shutdown());
    }
}

/// What a worker does after an attempt.
enum Outcome {
    /// Resolve the flush; drop the job it carries first (that of a successful
    /// attempt, or of a failed one that is not retried). Both
    /// happen after the state lock is released: dropping a job runs its
    /// owner's code (it frees the flushed memtable), which must be free to
    /// use the scheduler and must not hold up the other workers.
    Resolve(Arc<Completion>, u32, FlushResult, Option<Box<dyn FlushJob>>),
    Retry,
}

fn worker(shared: &Shared) {
    let mut st = shared.state.lock();
    loop {
        if st.shutting_down {
            return;
        }
        let now = Instant::now();
        promote_due_retries(&mut st, now);
        let Some(key) = st.ready.pop_front() else {
            match next_retry(&st) {
                Some(deadline) => {
                    shared.work.wait_until(&mut st, deadline);
                }
                None => shared.work.wait(&mut st),
            }
            continue;
        };
        if !st.ready.is_empty() {
            // Retries promoted together: let another idle worker take one.
            shared.work.notify_one();
        }
        let entry = st.entries.get_mut(&key).expect("a ready key has an entry");
        let mut job = entry.job.take().expect("a ready entry holds its job");
        let attempt = entry.failures + 1;
        let dir_index = st.dirs.pick(now);
        let dir = st.dirs.path(dir_index).to_path_buf();
        st.running += 1;
        drop(st);

        let ctx = FlushContext {
            key,
            dir: &dir,
            dir_index,
            attempt,
            written: Cell::new(0),
            shared,
        };
        let result = run_attempt(&mut *job, &ctx);
        // Asked here, outside the lock, like every other call into the job.
        let retry = result.is_err() && job.retry_on_failure();
        let written = ctx.written();
        if let (Err(e), Some(listener)) = (&result, &shared.listener) {
            // A panicking listener must not kill the worker holding the job
            // (its handles would never resolve and shutdown would wait for
            // it for ever); the panic hook has reported the panic.
            let _ = std::panic::catch_unwind(AssertUnwindSafe(|| {
                listener.on_attempt_failed(key, written, e);
            }));
        }

        st = shared.state.lock();
        st.running -= 1;
        let attempt = Attempt {
            key,
            dir_index,
            dir: &dir,
            retry,
        };
        let outcome = finish_attempt(shared, &mut st, &attempt, job, result);
        if st.running == 0 {
            shared.idle.notify_all();
        }
        match outcome {
            Outcome::Resolve(completion, attempts, result, finished_job) => {
                drop(st);
                drop(finished_job);
                completion.resolve(attempts, result);
                st = shared.state.lock();
            }
            // Idle workers may be waiting without a deadline: let them see
            // the new retry time.
            Outcome::Retry => shared.work.notify_all(),
        }
    }
}

/// Runs one attempt; a panic in the job counts as a failed attempt (the
/// job is retried like any other failure), so a worker never dies holding
/// a job.
fn run_attempt(job: &mut dyn FlushJob, ctx: &FlushContext<'_>) -> Result<FlushOutput, FlushError> {
    std::panic::catch_unwind(AssertUnwindSafe(|| job.run(ctx))).unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "non-string panic payload".to_owned());
        Err(FlushError::job_failed(
            ctx.key(),
            format!("job panicked: {message}"),
        ))
    })
}

/// Moves jobs whose backoff ended into the ready queue.
fn promote_due_retries(st: &mut State, now: Instant) {
    while let Some(Reverse((retry_at, key))) = st.backing_off.peek().copied() {
        if retry_at > now {
            break;
        }
        st.backing_off.pop();
        st.ready.push_back(key);
    }
}

fn next_retry(st: &State) -> Option<Instant> {
    st.backing_off
        .peek()
        .map(|Reverse((retry_at, _))| *retry_at)
}

/// An attempt that just ran.
struct Attempt<'a> {
    key: JobKey,
    /// The directory it ran in.
    dir_index: usize,
    dir: &'a Path,
    /// Whether to retry it if it failed ([`FlushJob::retry_on_failure`]).
    retry: bool,
}

/// Updates the state after `attempt` ran.
fn finish_attempt(
    shared: &Shared,
    st: &mut State,
    attempt: &Attempt<'_>,
    job: Box<dyn FlushJob>,
    result: Result<FlushOutput, FlushError>,
) -> Outcome {
    let Attempt {
        key,
        dir_index,
        dir,
        ..
    } = *attempt;
    let mut entry = st
        .entries
        .remove(&key)
        .expect("a running job keeps its entry until its attempt is finished");
    let attempts = entry.failures + 1;
    match result {
        Ok(output) => {
            st.dirs.succeeded(dir_index);
            st.metrics.completed += 1;
            let report = FlushReport {
                key,
                dir: dir.to_path_buf(),
                attempts,
                output,
            };
            Outcome::Resolve(entry.completion, attempts, Ok(report), Some(job))
        }
        Err(error) => {
            let now = Instant::now();
            if error.is_directory_failure() {
                st.dirs.failed(dir_index, now);
            }
            st.metrics.failed_attempts += 1;
            st.metrics.last_error = Some(error.clone());
            entry.failures = attempts;
            entry.completion.attempt_failed(attempts, error.clone());
            if st.shutting_down {
                st.metrics.cancelled += 1;
                st.abandoned.push(job);
                return Outcome::Resolve(
                    entry.completion,
                    attempts,
                    Err(FlushError::Cancelled { key }),
                    None,
                );
            }
            if !attempt.retry {
                // The owner retries by itself: the job leaves with its error.
                return Outcome::Resolve(entry.completion, attempts, Err(error), Some(job));
            }
            if shared
                .retry
                .max_attempts
                .is_some_and(|max| attempts >= max.get())
            {
                st.metrics.gave_up += 1;
                st.abandoned.push(job);
                let gave_up = FlushError::GaveUp {
                    key,
                    attempts,
                    last: Box::new(error),
                };
                return Outcome::Resolve(entry.completion, attempts, Err(gave_up), None);
            }
            st.metrics.retries += 1;
            entry.job = Some(job);
            st.entries.insert(key, entry);
            let retry_at = crate::config::deadline_after(now, shared.retry.backoff(attempts));
            st.backing_off.push(Reverse((retry_at, key)));
            Outcome::Retry
        }
    }
}
