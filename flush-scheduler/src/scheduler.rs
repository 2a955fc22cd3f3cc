//! The scheduler: two queues, data workers and tail workers, shutdown.

use std::collections::VecDeque;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::time::Instant;

use crate::config::SchedulerConfig;
use crate::directories::{self, Directories};
use crate::error::Error;
use crate::job::{FlushContext, FlushJob, HandedBack, Phase};
use crate::metrics::FlushMetrics;
use crate::sync::{Arc, Condvar, Mutex, PlainArc, thread};

#[cfg(all(test, loom))]
mod loom_models;

/// A job between submission and completion, with the directory its data
/// phase got (the tail phase uses the same one).
struct Task {
    job: Box<dyn FlushJob>,
    dir: usize,
}

/// One kind of worker: its queue and how many of its phases run.
#[derive(Default)]
struct Lane {
    queue: VecDeque<Task>,
    running: usize,
}

struct State {
    /// Jobs waiting for their data phase (the directory is picked when it
    /// starts, so `Task::dir` is unset here).
    data: Lane,
    /// Jobs whose data is written, waiting for their tail phase.
    tails: Lane,
    shutting_down: bool,
    dirs: Directories,
    /// Jobs whose data phase ended after shutdown began: their tail is not
    /// run, they are handed back.
    handed_back: Vec<HandedBack>,
    metrics: FlushMetrics,
}

impl State {
    fn lane(&mut self, phase: Phase) -> &mut Lane {
        match phase {
            Phase::Data => &mut self.data,
            Phase::Tail => &mut self.tails,
        }
    }

    fn running(&self) -> usize {
        self.data.running + self.tails.running
    }
}

/// State shared by the scheduler and its workers.
struct Shared {
    state: Mutex<State>,
    /// Data workers wait here for work or shutdown.
    data_ready: Condvar,
    /// Tail workers wait here for work or shutdown.
    tail_ready: Condvar,
    /// Shutdown waits here for running phases to end.
    idle: Condvar,
}

impl Shared {
    fn ready(&self, phase: Phase) -> &Condvar {
        match phase {
            Phase::Data => &self.data_ready,
            Phase::Tail => &self.tail_ready,
        }
    }
}

/// A job submission that was not accepted: the scheduler is shut down. The
/// job is handed back, so nothing it holds is lost.
pub struct Rejected {
    /// Why the job was rejected ([`Error::ShutDown`]).
    pub error: Error,
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

/// Runs flush jobs on two pools of worker threads: data workers for data
/// phases and tail workers for tail phases.
///
/// * **The permit holder never waits behind tails**: data workers run only
///   data phases, so a flush that starts writing data (with `dirty-memory`,
///   the one holding the data-write permit) waits for nothing but another
///   data phase, however many tails are running or queued.
/// * **Bounded**: at most [`SchedulerConfig::data_workers`] data phases and
///   [`SchedulerConfig::tail_workers`] tail phases run at once; the rest
///   wait in two FIFO queues.
/// * **Directories**: each job gets a flush directory when its data phase
///   starts, round-robin, skipping directories that failed recently (see
///   [`SchedulerConfig::directory_cooldown`]).
/// * **Panics** in a phase are caught and complete the job with
///   [`Error::Panicked`]; workers never die.
/// * **No policy**: no retries, no coalescing, no progress accounting. The
///   job's owner (with `dirty-memory`, its manager) decides all of that.
/// * **Shutdown** ([`shutdown`](Self::shutdown)) waits for running phases
///   and hands back every job that has not completed.
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
    /// Validates `config` (worker counts, and that every flush directory
    /// exists, is a directory and is writable) and starts the workers.
    pub fn new(config: SchedulerConfig) -> Result<Self, Error> {
        config.validate_settings()?;
        directories::validate(&*config.fs, &config.flush_dirs)?;
        Self::start(config)
    }

    /// Starts the workers without touching the file system (loom models).
    pub(crate) fn start(config: SchedulerConfig) -> Result<Self, Error> {
        config.validate_settings()?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                data: Lane::default(),
                tails: Lane::default(),
                shutting_down: false,
                dirs: Directories::new(config.flush_dirs, config.directory_cooldown),
                handed_back: Vec::new(),
                metrics: FlushMetrics::default(),
            }),
            data_ready: Condvar::new(),
            tail_ready: Condvar::new(),
            idle: Condvar::new(),
        });
        let scheduler = Self {
            shared,
            workers: Mutex::new(Vec::new()),
        };
        let lanes = [
            (Phase::Data, config.data_workers),
            (Phase::Tail, config.tail_workers),
        ];
        for (phase, count) in lanes {
            for index in 0..count {
                let shared = Arc::clone(&scheduler.shared);
                let name = format!("flush-{phase}-{index}");
                match thread::spawn_named(name.clone(), move || worker(&shared, phase)) {
                    Ok(handle) => scheduler.workers.lock().push(handle),
                    // Dropping `scheduler` stops the workers already started.
                    Err(e) => {
                        return Err(Error::WorkerSpawn {
                            name,
                            source: PlainArc::new(e),
                        });
                    }
                }
            }
        }
        Ok(scheduler)
    }

    /// Queues `job` for its data phase. After shutdown the job is handed
    /// back in [`Rejected`].
    pub fn submit(&self, job: Box<dyn FlushJob>) -> Result<(), Rejected> {
        let mut st = self.shared.state.lock();
        if st.shutting_down {
            return Err(Rejected {
                error: Error::ShutDown,
                job,
            });
        }
        st.data.queue.push_back(Task { job, dir: 0 });
        st.metrics.submitted += 1;
        drop(st);
        self.shared.data_ready.notify_one();
        Ok(())
    }

    /// A snapshot of the counters.
    pub fn metrics(&self) -> FlushMetrics {
        let st = self.shared.state.lock();
        let mut m = st.metrics.clone();
        m.queued_data = st.data.queue.len();
        m.queued_tails = st.tails.queue.len();
        m.running_data = st.data.running;
        m.running_tails = st.tails.running;
        m.directories = st.dirs.metrics(Instant::now());
        m
    }

    /// Shuts down: rejects new submissions, takes every queued job out of
    /// both queues, waits for the running phases to end, and stops the
    /// workers. A data phase that ends meanwhile does not start its tail.
    ///
    /// Returns every job that has not completed, with the phase it waits
    /// for; [`FlushJob::complete`] is not called for them. The scheduler
    /// drops no job. Calling it again returns an empty list.
    pub fn shutdown(&self) -> Vec<HandedBack> {
        let mut st = self.shared.state.lock();
        st.shutting_down = true;
        let mut jobs: Vec<HandedBack> = Vec::new();
        for phase in [Phase::Data, Phase::Tail] {
            let queued = std::mem::take(&mut st.lane(phase).queue);
            jobs.extend(queued.into_iter().map(|t| HandedBack {
                job: t.job,
                waiting_for: phase,
            }));
        }
        self.shared.data_ready.notify_all();
        self.shared.tail_ready.notify_all();
        while st.running() > 0 {
            self.shared.idle.wait(&mut st);
        }
        jobs.append(&mut st.handed_back);
        st.metrics.handed_back += jobs.len() as u64;
        drop(st);
        let workers = std::mem::take(&mut *self.workers.lock());
        for worker in workers {
            // Workers catch every panic of a job; joining cannot fail unless
            // the scheduler itself panicked, which shutdown does not repeat.
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

/// The loop of a worker of `phase`.
fn worker(shared: &Shared, phase: Phase) {
    let mut st = shared.state.lock();
    loop {
        let Some(mut task) = st.lane(phase).queue.pop_front() else {
            if st.shutting_down {
                return;
            }
            shared.ready(phase).wait(&mut st);
            continue;
        };
        if phase == Phase::Data {
            task.dir = st.dirs.pick(Instant::now());
        }
        st.lane(phase).running += 1;
        let dir = st.dirs.path(task.dir).to_path_buf();
        drop(st);

        let ctx = FlushContext { dir: &dir, phase };
        let result = run_phase(&mut *task.job, &ctx);

        st = shared.state.lock();
        st.lane(phase).running -= 1;
        if st.running() == 0 {
            shared.idle.notify_all();
        }
        if let Err(e) = &result
            && e.is_directory_failure()
        {
            st.dirs.failed(task.dir, Instant::now());
        }
        match (phase, result) {
            (Phase::Data, Ok(())) if st.shutting_down => {
                st.handed_back.push(HandedBack {
                    job: task.job,
                    waiting_for: Phase::Tail,
                });
            }
            (Phase::Data, Ok(())) => {
                st.tails.queue.push_back(task);
                shared.tail_ready.notify_one();
            }
            (_, outcome) => {
                match &outcome {
                    Ok(()) => {
                        st.dirs.succeeded(task.dir);
                        st.metrics.completed += 1;
                    }
                    Err(e) => {
                        st.metrics.failed += 1;
                        if matches!(e, Error::Panicked { .. }) {
                            st.metrics.panicked += 1;
                        }
                    }
                }
                // `complete` runs the owner's code (it may free the flushed
                // memtable, or submit again): never under the lock.
                drop(st);
                let job = task.job;
                // A panic in `complete` has been reported by the panic hook
                // and dropped the job while unwinding; the worker goes on.
                let _ = std::panic::catch_unwind(AssertUnwindSafe(move || job.complete(outcome)));
                st = shared.state.lock();
            }
        }
    }
}

/// Runs one phase; a panic in the job completes it with [`Error::Panicked`],
/// so a worker never dies holding a job.
fn run_phase(job: &mut dyn FlushJob, ctx: &FlushContext<'_>) -> Result<(), Error> {
    let phase = ctx.phase();
    let result = std::panic::catch_unwind(AssertUnwindSafe(|| match phase {
        Phase::Data => job.write_data(ctx),
        Phase::Tail => job.write_tail(ctx).and_then(|()| job.publish(ctx)),
    }));
    match result {
        Ok(result) => result.map_err(|e| e.in_phase(phase)),
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-string panic payload".to_owned());
            Err(Error::Panicked { phase, message })
        }
    }
}
