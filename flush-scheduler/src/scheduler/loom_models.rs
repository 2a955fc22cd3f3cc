//! Loom models of the scheduler's real code (run with `--cfg loom`).
//!
//! Each model starts a scheduler with one data worker and one tail worker,
//! without touching the file system.

use loom::model::Builder;

use crate::config::SchedulerConfig;
use crate::error::Error;
use crate::job::{FlushContext, FlushJob, Phase};
use crate::scheduler::FlushScheduler;
use crate::sync::{Arc, Condvar, Mutex, thread};

/// A model builder bounded to 2 preemptions unless `LOOM_MAX_PREEMPTIONS`
/// says otherwise.
fn builder() -> Builder {
    let mut b = Builder::new();
    b.preemption_bound = b.preemption_bound.or(Some(2));
    b
}

fn one_of_each() -> FlushScheduler {
    let config = SchedulerConfig::new(["/loom-flush"])
        .data_workers(1)
        .tail_workers(1);
    FlushScheduler::start(config).expect("valid config")
}

/// A flag threads can wait on.
#[derive(Debug)]
struct Flag {
    set: Mutex<bool>,
    cv: Condvar,
}

impl Flag {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            set: Mutex::new(false),
            cv: Condvar::new(),
        })
    }
    fn raise(&self) {
        *self.set.lock() = true;
        self.cv.notify_all();
    }
    fn wait(&self) {
        let mut set = self.set.lock();
        while !*set {
            self.cv.wait(&mut set);
        }
    }
}

/// Raises `data_started` in its data phase; its tail waits for `tail_gate`;
/// `complete` records the outcome in `done`.
struct ModelJob {
    data_started: Option<Arc<Flag>>,
    tail_gate: Option<Arc<Flag>>,
    done: Arc<Mutex<Vec<(u64, bool)>>>,
    completed: Option<Arc<Flag>>,
    id: u64,
}

impl ModelJob {
    fn boxed(id: u64, done: &Arc<Mutex<Vec<(u64, bool)>>>) -> Box<Self> {
        Box::new(Self {
            data_started: None,
            tail_gate: None,
            done: Arc::clone(done),
            completed: None,
            id,
        })
    }
}

impl FlushJob for ModelJob {
    fn write_data(&mut self, _ctx: &FlushContext<'_>) -> Result<(), Error> {
        if let Some(started) = &self.data_started {
            started.raise();
        }
        Ok(())
    }

    fn write_tail(&mut self, _ctx: &FlushContext<'_>) -> Result<(), Error> {
        if let Some(gate) = &self.tail_gate {
            gate.wait();
        }
        Ok(())
    }

    fn complete(self: Box<Self>, outcome: Result<(), Error>) {
        self.done.lock().push((self.id, outcome.is_ok()));
        if let Some(completed) = &self.completed {
            completed.raise();
        }
    }
}

/// Issue 12: with the only tail worker held by a tail, a new job's data
/// phase still runs (it would deadlock, which loom reports, if it queued
/// behind the tail), in every interleaving.
#[test]
fn loom_data_phase_never_waits_behind_a_tail() {
    builder().check(|| {
        let scheduler = one_of_each();
        let done = Arc::new(Mutex::new(Vec::new()));
        let tail_gate = Flag::new();
        let mut busy = ModelJob::boxed(1, &done);
        busy.tail_gate = Some(Arc::clone(&tail_gate));
        scheduler
            .submit(busy)
            .map_err(|r| r.error)
            .expect("accepted");

        let holder_started = Flag::new();
        let mut holder = ModelJob::boxed(2, &done);
        holder.data_started = Some(Arc::clone(&holder_started));
        scheduler
            .submit(holder)
            .map_err(|r| r.error)
            .expect("accepted");
        // The tail of job 1 cannot end before this returns.
        holder_started.wait();
        assert!(
            done.lock().is_empty(),
            "no tail ended before the data phase ran"
        );

        tail_gate.raise();
        // Job 2's tail may still be queued at shutdown: then it comes back.
        let handed_back = scheduler.shutdown();
        assert_eq!(done.lock().len() + handed_back.len(), 2);
        assert!(handed_back.iter().all(|h| h.waiting_for == Phase::Tail));
    });
}

/// Shutdown with one running tail, one queued data phase: the tail
/// finishes and completes; the queued job is either handed back (waiting
/// for whichever phase it reached) or, if it raced through, completed;
/// nothing is lost and nothing completes twice.
#[test]
fn loom_shutdown_hands_back_or_completes_every_job() {
    builder().check(|| {
        let scheduler = Arc::new(one_of_each());
        let done = Arc::new(Mutex::new(Vec::new()));
        let tail_gate = Flag::new();
        let mut first = ModelJob::boxed(1, &done);
        first.tail_gate = Some(Arc::clone(&tail_gate));
        scheduler
            .submit(first)
            .map_err(|r| r.error)
            .expect("accepted");
        scheduler
            .submit(ModelJob::boxed(2, &done))
            .map_err(|r| r.error)
            .expect("accepted");

        let opener =
            thread::spawn_named("opener".into(), move || tail_gate.raise()).expect("spawn");
        let handed_back = scheduler.shutdown();
        opener.join().expect("opener");

        let done = done.lock();
        assert_eq!(done.len() + handed_back.len(), 2, "{:?}", *done);
        assert!(done.iter().all(|(_, ok)| *ok));
        let mut ids: Vec<_> = done.iter().map(|(id, _)| *id).collect();
        ids.dedup();
        assert_eq!(ids.len(), done.len(), "a job completed twice");
        for h in &handed_back {
            assert!(matches!(h.waiting_for, Phase::Data | Phase::Tail));
        }
        let m = scheduler.metrics();
        assert_eq!(
            (
                m.queued_data,
                m.queued_tails,
                m.running_data,
                m.running_tails
            ),
            (0, 0, 0, 0)
        );
    });
}

/// Jobs submitted from two threads while the workers pick: both complete
/// once, each through its data and its tail worker (a missed wake-up of an
/// idle data or tail worker deadlocks the model, which loom reports).
#[test]
fn loom_workers_pick_while_another_thread_submits() {
    builder().check(|| {
        let scheduler = Arc::new(one_of_each());
        let done = Arc::new(Mutex::new(Vec::new()));
        let theirs_done = Flag::new();
        let other = {
            let scheduler = Arc::clone(&scheduler);
            let done = Arc::clone(&done);
            let theirs_done = Arc::clone(&theirs_done);
            thread::spawn_named("submit".into(), move || {
                let mut job = ModelJob::boxed(1, &done);
                job.completed = Some(theirs_done);
                scheduler
                    .submit(job)
                    .map_err(|r| r.error)
                    .expect("accepted");
            })
            .expect("spawn")
        };
        let mine_done = Flag::new();
        let mut mine = ModelJob::boxed(2, &done);
        mine.completed = Some(Arc::clone(&mine_done));
        scheduler
            .submit(mine)
            .map_err(|r| r.error)
            .expect("accepted");
        mine_done.wait();
        theirs_done.wait();
        other.join().expect("submitter");
        assert_eq!(done.lock().len(), 2);
        assert!(scheduler.shutdown().is_empty());
    });
}
