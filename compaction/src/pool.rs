//! The manager's workers: a queue of tasks, tasks due later (a failed
//! check's retry), worker threads, and a stop signal that running tasks
//! poll (and that interrupts their throttling waits), so `close` returns
//! promptly.

use std::collections::VecDeque;
use std::fmt;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::sync::{Arc, AtomicBool, Condvar, Mutex, Ordering, thread};

/// A unit of work for the pool.
pub(crate) trait Task: Send + 'static {
    /// Runs the task; it should poll `stop` and return early when it is set.
    fn run(self: Box<Self>, stop: &Stop);

    /// The task will never run (the pool closed first).
    fn cancel(self: Box<Self>);
}

/// A stop request that tasks poll and can wait on.
#[derive(Debug)]
pub(crate) struct Stop {
    flag: AtomicBool,
    lock: Mutex<()>,
    cv: Condvar,
}

impl Stop {
    fn new() -> Self {
        Stop {
            flag: AtomicBool::new(false),
            lock: Mutex::new(()),
            cv: Condvar::new(),
        }
    }

    /// True once a stop was requested.
    pub(crate) fn is_set(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }

    /// A stop signal of its own, for tests of code that polls one.
    #[cfg(test)]
    pub(crate) fn for_tests() -> Self {
        Stop::new()
    }

    /// Requests the stop (tests; the pool's `close` does it otherwise).
    #[cfg(test)]
    pub(crate) fn request(&self) {
        self.set();
    }

    fn set(&self) {
        let _guard = self.lock.lock();
        self.flag.store(true, Ordering::Release);
        self.cv.notify_all();
    }

    /// Waits up to `wait`, or until a stop is requested; true if stopped.
    pub(crate) fn wait_for(&self, wait: Duration) -> bool {
        let mut guard = self.lock.lock();
        if self.is_set() {
            return true;
        }
        let _timed_out = self.cv.wait_for(&mut guard, wait);
        self.is_set()
    }
}

struct State {
    tasks: VecDeque<Box<dyn Task>>,
    /// Tasks that join `tasks` once their time comes, in no order.
    delayed: Vec<(Instant, Box<dyn Task>)>,
    running: usize,
    closed: bool,
}

impl State {
    /// Moves the delayed tasks that are due into the queue; returns when
    /// the next one is due.
    fn release_due(&mut self, now: Instant) -> Option<Instant> {
        let mut next: Option<Instant> = None;
        let mut i = 0;
        while i < self.delayed.len() {
            let due = self.delayed[i].0;
            if due <= now {
                let (_, task) = self.delayed.swap_remove(i);
                self.tasks.push_back(task);
            } else {
                next = Some(next.map_or(due, |n| n.min(due)));
                i += 1;
            }
        }
        next
    }
}

pub(crate) struct Shared {
    state: Mutex<State>,
    work: Condvar,
    stop: Stop,
}

/// Worker threads running [`Task`]s.
pub(crate) struct Pool {
    shared: Arc<Shared>,
    workers: Mutex<Vec<thread::JoinHandle<()>>>,
}

impl fmt::Debug for Pool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("pending", &self.pending())
            .field("running", &self.running())
            .finish_non_exhaustive()
    }
}

fn worker(shared: &Shared) {
    let mut state = shared.state.lock();
    loop {
        if state.closed {
            return;
        }
        let next_due = state.release_due(crate::sync::time::now());
        if let Some(task) = state.tasks.pop_front() {
            state.running += 1;
            drop(state);
            task.run(&shared.stop);
            state = shared.state.lock();
            state.running -= 1;
            continue;
        }
        match next_due {
            Some(due) => {
                shared.work.wait_until(&mut state, due);
            }
            None => shared.work.wait(&mut state),
        }
    }
}

impl Pool {
    /// Starts `workers` threads named `name-<i>`.
    pub(crate) fn new(workers: usize, name: &str) -> Result<Self> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                tasks: VecDeque::new(),
                delayed: Vec::new(),
                running: 0,
                closed: false,
            }),
            work: Condvar::new(),
            stop: Stop::new(),
        });
        let pool = Pool {
            shared,
            workers: Mutex::new(Vec::new()),
        };
        for i in 0..workers {
            let shared = Arc::clone(&pool.shared);
            match thread::spawn_named(format!("{name}-{i}"), move || worker(&shared)) {
                Ok(handle) => pool.workers.lock().push(handle),
                Err(e) => {
                    pool.close();
                    return Err(Error::Spawn(e));
                }
            }
        }
        Ok(pool)
    }

    /// Queues a task; hands it back when the pool is closed.
    pub(crate) fn submit(&self, task: Box<dyn Task>) -> Result<(), Box<dyn Task>> {
        let mut state = self.shared.state.lock();
        if state.closed {
            return Err(task);
        }
        state.tasks.push_back(task);
        drop(state);
        self.shared.work.notify_one();
        Ok(())
    }

    /// What a task needs to queue a task of its own later
    /// ([`submit_at`]).
    pub(crate) fn handle(&self) -> Arc<Shared> {
        Arc::clone(&self.shared)
    }

    /// Tasks queued to run later, not due yet.
    pub(crate) fn delayed(&self) -> usize {
        self.shared.state.lock().delayed.len()
    }

    /// Tasks queued, not started.
    pub(crate) fn pending(&self) -> usize {
        self.shared.state.lock().tasks.len()
    }

    /// Tasks running.
    pub(crate) fn running(&self) -> usize {
        self.shared.state.lock().running
    }

    /// Stops the pool: running tasks see the stop and return, queued ones
    /// are cancelled, workers are joined. Idempotent.
    pub(crate) fn close(&self) {
        let queued: Vec<Box<dyn Task>> = {
            let mut state = self.shared.state.lock();
            state.closed = true;
            let delayed = std::mem::take(&mut state.delayed);
            let mut queued: Vec<Box<dyn Task>> = state.tasks.drain(..).collect();
            queued.extend(delayed.into_iter().map(|(_, task)| task));
            queued
        };
        self.shared.stop.set();
        self.shared.work.notify_all();
        for task in queued {
            task.cancel();
        }
        let workers = std::mem::take(&mut *self.workers.lock());
        for w in workers {
            // A panicking task already lost its work; close still succeeds.
            let _ = w.join();
        }
    }
}

/// Queues `task` to run once `due` has come, on the pool `shared` is the
/// shared part of ([`Pool::handle`]); hands it back when the pool is closed.
pub(crate) fn submit_at(
    shared: &Shared,
    due: Instant,
    task: Box<dyn Task>,
) -> Result<(), Box<dyn Task>> {
    let mut state = shared.state.lock();
    if state.closed {
        return Err(task);
    }
    state.delayed.push((due, task));
    drop(state);
    // A waiting worker recomputes its wait.
    shared.work.notify_one();
    Ok(())
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sync::AtomicUsize;

    /// A stand-in job: it "writes" an output in steps, polling the stop
    /// signal between steps; a stopped job removes its partial output and
    /// leaves its input; a finished one swaps input for output in one step.
    struct FakeJob {
        disk: Arc<Mutex<(bool, bool, bool)>>, // (input, partial output, output)
        cancelled: Arc<AtomicUsize>,
    }

    impl Task for FakeJob {
        fn run(self: Box<Self>, stop: &Stop) {
            for _ in 0..2 {
                if stop.is_set() {
                    self.disk.lock().1 = false;
                    return;
                }
                self.disk.lock().1 = true;
            }
            let mut disk = self.disk.lock();
            *disk = (false, false, true);
        }

        fn cancel(self: Box<Self>) {
            self.cancelled.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn loom_a_stopped_job_against_close_leaves_inputs_or_outputs_never_partials() {
        let mut builder = loom::model::Builder::new();
        builder.preemption_bound = Some(2);
        builder.check(|| {
            let pool = Pool::new(1, "loom").unwrap();
            let disk = Arc::new(Mutex::new((true, false, false)));
            let cancelled = Arc::new(AtomicUsize::new(0));
            let job = FakeJob {
                disk: Arc::clone(&disk),
                cancelled: Arc::clone(&cancelled),
            };
            assert!(pool.submit(Box::new(job)).is_ok());
            pool.close();
            let (input, partial, output) = *disk.lock();
            assert!(!partial, "close returned with a partial output");
            assert!(input != output, "exactly one of input and output exists");
            if cancelled.load(Ordering::Relaxed) == 1 {
                assert!(input);
            }
            // Closed: new work is refused.
            let again = FakeJob {
                disk: Arc::clone(&disk),
                cancelled,
            };
            assert!(pool.submit(Box::new(again)).is_err());
        });
    }
}
