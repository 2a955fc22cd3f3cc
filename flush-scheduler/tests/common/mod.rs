//! Simulated flush jobs and small synchronisation helpers shared by the
//! integration tests. Waits are bounded by a generous timeout so a bug
//! fails a test instead of hanging it; nothing sleeps.

#![allow(dead_code, reason = "each test file uses a different subset")]

use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use flush_scheduler::{Error, FlushContext, FlushJob, Phase};

/// Bound on every blocking wait in the tests.
pub(crate) const PATIENCE: Duration = Duration::from_secs(20);

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

/// What one phase of a [`SimJob`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    Succeed,
    FailJob,
    FailDirectory,
    Panic,
}

/// What the tests observe: every phase started (job, phase, directory) and
/// every outcome (job, result), in order.
#[derive(Debug, Default)]
pub(crate) struct Journal {
    pub(crate) started: Vec<(u64, Phase, PathBuf)>,
    pub(crate) outcomes: Vec<(u64, Result<(), Error>)>,
}

impl Journal {
    pub(crate) fn started(&self, id: u64, phase: Phase) -> bool {
        self.started.iter().any(|(i, p, _)| (*i, *p) == (id, phase))
    }

    pub(crate) fn outcome(&self, id: u64) -> Option<&Result<(), Error>> {
        self.outcomes.iter().find(|(i, _)| *i == id).map(|(_, r)| r)
    }

    pub(crate) fn count(&self, phase: Phase) -> usize {
        self.started.iter().filter(|(_, p, _)| *p == phase).count()
    }
}

pub(crate) type SharedJournal = Arc<Watched<Journal>>;

pub(crate) fn journal() -> SharedJournal {
    Watched::new(Journal::default())
}

/// A simulated flush job: each phase is logged, may block on a gate, and
/// then does its scripted step; the outcome is logged by `complete`.
#[derive(Debug)]
pub(crate) struct SimJob {
    pub(crate) id: u64,
    pub(crate) data: Step,
    pub(crate) tail: Step,
    pub(crate) data_gate: Option<Gate>,
    pub(crate) tail_gate: Option<Gate>,
    pub(crate) journal: SharedJournal,
}

impl SimJob {
    pub(crate) fn new(id: u64, journal: &SharedJournal) -> Self {
        Self {
            id,
            data: Step::Succeed,
            tail: Step::Succeed,
            data_gate: None,
            tail_gate: None,
            journal: Arc::clone(journal),
        }
    }

    pub(crate) fn boxed(self) -> Box<Self> {
        Box::new(self)
    }

    fn phase(&self, ctx: &FlushContext<'_>, step: Step, gate: Option<&Gate>) -> Result<(), Error> {
        self.journal.update(|j| {
            j.started
                .push((self.id, ctx.phase(), ctx.dir().to_path_buf()))
        });
        if let Some(gate) = gate {
            gate.wait_for(|open| *open);
        }
        match step {
            Step::Succeed => Ok(()),
            Step::FailJob => Err(Error::job_failed("simulated job failure")),
            Step::FailDirectory => Err(Error::directory_failed(
                ctx.dir(),
                std::io::Error::other("simulated device failure"),
            )),
            Step::Panic => panic!("simulated panic in job {}", self.id),
        }
    }
}

impl FlushJob for SimJob {
    fn write_data(&mut self, ctx: &FlushContext<'_>) -> Result<(), Error> {
        self.phase(ctx, self.data, self.data_gate.as_ref())
    }

    fn write_tail(&mut self, ctx: &FlushContext<'_>) -> Result<(), Error> {
        self.phase(ctx, self.tail, self.tail_gate.as_ref())
    }

    fn complete(self: Box<Self>, outcome: Result<(), Error>) {
        self.journal.update(|j| j.outcomes.push((self.id, outcome)));
    }
}
