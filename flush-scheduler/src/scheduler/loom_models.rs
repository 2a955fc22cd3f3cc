//! Loom models of the scheduler's real code (run with `--cfg loom`).
//!
//! Each model starts a one-worker scheduler without touching the file
//! system. Loom does not model time, so no model involves a retry backoff.

use loom::model::Builder;

use crate::config::SchedulerConfig;
use crate::error::FlushError;
use crate::job::{FlushContext, FlushJob, FlushOutput, JobKey};
use crate::scheduler::FlushScheduler;
use crate::sync::{Arc, Condvar, Mutex, thread};

/// A model builder bounded to 2 preemptions unless `LOOM_MAX_PREEMPTIONS`
/// says otherwise.
fn builder() -> Builder {
    let mut b = Builder::new();
    b.preemption_bound = b.preemption_bound.or(Some(2));
    b
}

fn one_worker() -> FlushScheduler {
    FlushScheduler::start(SchedulerConfig::new(["/loom-flush"]).workers(1)).expect("valid config")
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

/// Counts its runs, raises `started`, then optionally waits for `gate`.
struct ModelJob {
    key: u64,
    tag: u64,
    runs: Arc<Mutex<u32>>,
    started: Option<Arc<Flag>>,
    gate: Option<Arc<Flag>>,
}

impl ModelJob {
    fn boxed(key: u64, tag: u64, runs: &Arc<Mutex<u32>>) -> Box<Self> {
        Box::new(Self {
            key,
            tag,
            runs: Arc::clone(runs),
            started: None,
            gate: None,
        })
    }
}

impl FlushJob for ModelJob {
    fn key(&self) -> JobKey {
        JobKey::new(self.key)
    }

    fn run(&mut self, _ctx: &FlushContext<'_>) -> Result<FlushOutput, FlushError> {
        *self.runs.lock() += 1;
        if let Some(started) = &self.started {
            started.raise();
        }
        if let Some(gate) = &self.gate {
            gate.wait();
        }
        Ok(FlushOutput {
            bytes_written: self.tag,
            files: Vec::new(),
        })
    }
}

/// Issue 7, model (c): concurrent explicit flush requests for one memtable
/// run one flush, and every requester sees its result.
#[test]
fn loom_concurrent_submissions_for_one_key_run_one_job() {
    builder().check(|| {
        let scheduler = Arc::new(one_worker());
        let runs = Arc::new(Mutex::new(0));
        let gate = Flag::new();
        let submitters: Vec<_> = (1..=2)
            .map(|tag| {
                let scheduler = Arc::clone(&scheduler);
                let runs = Arc::clone(&runs);
                let gate = Arc::clone(&gate);
                thread::spawn_named(format!("submit-{tag}"), move || {
                    let mut job = ModelJob::boxed(7, tag, &runs);
                    job.gate = Some(gate);
                    let handle = scheduler
                        .submit(job)
                        .map_err(|r| r.error)
                        .expect("accepted");
                    handle
                })
                .expect("spawn")
            })
            .collect();
        let handles: Vec<_> = submitters
            .into_iter()
            .map(|t| t.join().expect("submitter"))
            .collect();
        // Both requests were made before the flush could finish.
        gate.raise();
        let a = handles[0].wait().expect("flush succeeds");
        let b = handles[1].wait().expect("flush succeeds");
        assert!(handles[0].same_flush(&handles[1]));
        assert_eq!(a, b);
        assert_eq!(*runs.lock(), 1, "one job ran");
        assert_eq!(scheduler.metrics().coalesced, 1);
        assert!(scheduler.shutdown().is_empty());
    });
}

/// Shutdown with one running and one queued job: the running job finishes,
/// the queued one is either cancelled (and handed back) or, if the running
/// one finished first, run; a thread waiting on it is always woken.
#[test]
fn loom_shutdown_with_queued_and_running_jobs() {
    builder().check(|| {
        let scheduler = one_worker();
        let runs = Arc::new(Mutex::new(0));
        let started = Flag::new();
        let gate = Flag::new();
        let mut first = ModelJob::boxed(1, 1, &runs);
        first.started = Some(Arc::clone(&started));
        first.gate = Some(Arc::clone(&gate));
        let running = scheduler
            .submit(first)
            .map_err(|r| r.error)
            .expect("accepted");
        started.wait();
        let queued = scheduler
            .submit(ModelJob::boxed(2, 2, &runs))
            .map_err(|r| r.error)
            .expect("accepted");

        let waiter = {
            let queued = queued.clone();
            thread::spawn_named("waiter".into(), move || queued.wait()).expect("spawn")
        };
        let opener = thread::spawn_named("opener".into(), move || gate.raise()).expect("spawn");
        let handed_back = scheduler.shutdown();
        opener.join().expect("opener");
        let seen_by_waiter = waiter.join().expect("waiter");

        assert_eq!(
            running
                .wait()
                .expect("running job finishes")
                .output
                .bytes_written,
            1
        );
        match queued.wait() {
            Err(FlushError::Cancelled { key }) => {
                assert_eq!(key, JobKey::new(2));
                assert_eq!(handed_back.len(), 1);
                assert_eq!(handed_back[0].key(), key);
                assert_eq!(*runs.lock(), 1);
            }
            Ok(report) => {
                assert!(handed_back.is_empty());
                assert_eq!(report.key, JobKey::new(2));
                assert_eq!(*runs.lock(), 2);
            }
            Err(other) => panic!("unexpected {other}"),
        }
        assert_eq!(
            seen_by_waiter.is_ok(),
            queued.try_result().expect("resolved").is_ok()
        );
        let m = scheduler.metrics();
        assert_eq!((m.queued, m.running, m.backing_off), (0, 0, 0));
    });
}

/// A worker takes jobs while another thread submits: both jobs run once
/// and no submission is lost (no missed wake-up of the idle worker).
#[test]
fn loom_worker_picks_while_another_thread_submits() {
    builder().check(|| {
        let scheduler = Arc::new(one_worker());
        let runs = Arc::new(Mutex::new(0));
        let other = {
            let scheduler = Arc::clone(&scheduler);
            let runs = Arc::clone(&runs);
            thread::spawn_named("submit".into(), move || {
                let h = scheduler
                    .submit(ModelJob::boxed(1, 1, &runs))
                    .map_err(|r| r.error)
                    .expect("accepted");
                h.wait()
            })
            .expect("spawn")
        };
        let mine = scheduler
            .submit(ModelJob::boxed(2, 2, &runs))
            .map_err(|r| r.error)
            .expect("accepted");
        assert_eq!(mine.wait().expect("flush succeeds").output.bytes_written, 2);
        let theirs = other.join().expect("submitter").expect("flush succeeds");
        assert_eq!(theirs.output.bytes_written, 1);
        assert_eq!(*runs.lock(), 2);
        assert_eq!(scheduler.metrics().completed, 2);
        assert!(scheduler.shutdown().is_empty());
    });
}
