//! Simulated flush jobs and small synchronisation helpers shared by the
//! integration tests. Waits are bounded by a generous timeout so a bug
//! fails a test instead of hanging it; nothing sleeps.

#![allow(dead_code, reason = "each test file uses a different subset")]

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use flush_scheduler::{FlushContext, FlushError, FlushJob, FlushOutput, JobKey, RetryPolicy};

/// Bound on every blocking wait in the tests.
pub(crate) const PATIENCE: Duration = Duration::from_secs(20);

/// Retries fast enough for tests.
pub(crate) fn fast_retry() -> RetryPolicy {
    RetryPolicy {
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(4),
        max_attempts: None,
    }
}

/// A value guarded by a mutex, with a condition variable to wait for it to
/// satisfy a predicate.
#[derive(Debug, Default)]
pub(crate) struct Watched<T> {
    value: Mutex<T>,
    changed: Condvar,
}

impl<T> Watched<T> {
    pub(crate) fn new(value: T) -> Arc<Self> {
        Arc::new(Self {
            value: Mutex::new(value),
            changed: Condvar::new(),
        })
    }

    /// Changes the value and wakes waiters; returns what `f` returns.
    pub(crate) fn update<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        let r = f(&mut self.value.lock().unwrap());
        self.changed.notify_all();
        r
    }

    pub(crate) fn get<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        f(&self.value.lock().unwrap())
    }

    /// Blocks until `pred` holds (panics after [`PATIENCE`]).
    pub(crate) fn wait_for(&self, mut pred: impl FnMut(&T) -> bool) {
        let guard = self.value.lock().unwrap();
        let (_guard, timeout) = self
            .changed
            .wait_timeout_while(guard, PATIENCE, |v| !pred(v))
            .unwrap();
        assert!(
            !timeout.timed_out(),
            "condition not reached within {PATIENCE:?}"
        );
    }
}

/// A gate jobs can block on until the test opens it.
pub(crate) type Gate = Arc<Watched<bool>>;

pub(crate) fn gate() -> Gate {
    Watched::new(false)
}

pub(crate) fn open(gate: &Gate) {
    gate.update(|open| *open = true);
}

/// The "memtable" a simulated job flushes. Its drop is recorded, so tests
/// can check it is never dropped before the flush succeeded.
#[derive(Debug)]
pub(crate) struct Memtable {
    pub(crate) id: u64,
    pub(crate) rows: Vec<u8>,
    pub(crate) dropped: Arc<Watched<bool>>,
}

impl Drop for Memtable {
    fn drop(&mut self) {
        self.dropped.update(|d| *d = true);
    }
}

/// What one attempt of a [`SimJob`] does.
#[derive(Debug, Clone)]
pub(crate) enum Step {
    Succeed,
    FailJob,
    FailDirectory,
}

/// A simulated flush job: runs scripted steps, then succeeds; logs every
/// attempt; if gated, its final (successful) attempt blocks until the gate
/// opens.
#[derive(Debug)]
pub(crate) struct SimJob {
    pub(crate) memtable: Memtable,
    pub(crate) script: VecDeque<Step>,
    pub(crate) gate: Option<Gate>,
    pub(crate) log: Log,
}

impl SimJob {
    pub(crate) fn new(id: u64, log: &Log) -> Self {
        Self {
            memtable: Memtable {
                id,
                rows: vec![id as u8; 100],
                dropped: Watched::new(false),
            },
            script: VecDeque::new(),
            gate: None,
            log: Arc::clone(log),
        }
    }

    pub(crate) fn gated(mut self, gate: &Gate) -> Self {
        self.gate = Some(Arc::clone(gate));
        self
    }

    pub(crate) fn script(mut self, steps: impl IntoIterator<Item = Step>) -> Self {
        self.script = steps.into_iter().collect();
        self
    }
}

impl FlushJob for SimJob {
    fn key(&self) -> JobKey {
        JobKey::new(self.memtable.id)
    }

    fn run(&mut self, ctx: &FlushContext<'_>) -> Result<FlushOutput, FlushError> {
        assert!(
            !self.memtable.dropped.get(|d| *d),
            "the memtable is alive at every attempt"
        );
        self.log
            .update(|l| l.push((self.memtable.id, ctx.dir().to_path_buf(), ctx.attempt())));
        if let (Some(gate), true) = (&self.gate, self.script.is_empty()) {
            gate.wait_for(|open| *open);
        }
        ctx.report_written(self.memtable.rows.len() as u64 / 2);
        match self.script.pop_front().unwrap_or(Step::Succeed) {
            Step::Succeed => {
                ctx.report_written(self.memtable.rows.len() as u64 / 2);
                Ok(FlushOutput {
                    bytes_written: self.memtable.rows.len() as u64,
                    files: vec![ctx.dir().join(format!("{}.db", self.memtable.id))],
                })
            }
            Step::FailJob => Err(FlushError::job_failed(ctx.key(), "simulated job failure")),
            Step::FailDirectory => Err(FlushError::directory_failed(
                ctx.dir(),
                std::io::Error::other("simulated device failure"),
            )),
        }
    }
}

/// (key, directory, attempt) of every attempt, in start order.
pub(crate) type Log = Arc<Watched<Vec<(u64, std::path::PathBuf, u32)>>>;

pub(crate) fn log() -> Log {
    Watched::new(Vec::new())
}
