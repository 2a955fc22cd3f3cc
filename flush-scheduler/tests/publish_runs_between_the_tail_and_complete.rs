//! `FlushJob::publish` runs on the tail worker after a successful tail and
//! before `complete`; it does not run after a failed phase; its error or
//! panic completes the job with it, in the tail phase.

use std::sync::{Arc, Mutex};

use flush_scheduler::{Error, FlushContext, FlushJob, FlushScheduler, Phase, SchedulerConfig};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Publish {
    Ok,
    Fails,
    Panics,
}

/// Records the steps it ran, in order, and its outcome.
struct Recording {
    steps: Arc<Mutex<Vec<String>>>,
    tail_fails: bool,
    publish: Publish,
    done: std::sync::mpsc::Sender<Result<(), Error>>,
}

impl FlushJob for Recording {
    fn write_data(&mut self, _ctx: &FlushContext<'_>) -> Result<(), Error> {
        self.steps.lock().unwrap().push("data".into());
        Ok(())
    }

    fn write_tail(&mut self, _ctx: &FlushContext<'_>) -> Result<(), Error> {
        self.steps.lock().unwrap().push("tail".into());
        if self.tail_fails {
            return Err(Error::job_failed("tail failed"));
        }
        Ok(())
    }

    fn publish(&mut self, ctx: &FlushContext<'_>) -> Result<(), Error> {
        self.steps
            .lock()
            .unwrap()
            .push(format!("publish in {}", ctx.phase()));
        match self.publish {
            Publish::Ok => Ok(()),
            Publish::Fails => Err(Error::job_failed("publish failed")),
            Publish::Panics => panic!("publish panicked"),
        }
    }

    fn complete(self: Box<Self>, outcome: Result<(), Error>) {
        self.steps.lock().unwrap().push("complete".into());
        self.done.send(outcome).unwrap();
    }
}

fn run(tail_fails: bool, publish: Publish) -> (Vec<String>, Result<(), Error>) {
    let dir = tempfile::tempdir().unwrap();
    let scheduler = FlushScheduler::new(SchedulerConfig::new([dir.path()])).unwrap();
    let steps = Arc::new(Mutex::new(Vec::new()));
    let (done, outcome) = std::sync::mpsc::channel();
    let job = Recording {
        steps: Arc::clone(&steps),
        tail_fails,
        publish,
        done,
    };
    scheduler.submit(Box::new(job)).unwrap();
    let outcome = outcome
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("the job completes");
    assert!(scheduler.shutdown().is_empty());
    let steps = steps.lock().unwrap().clone();
    (steps, outcome)
}

#[test]
fn publish_runs_after_the_tail_and_before_complete() {
    let (steps, outcome) = run(false, Publish::Ok);
    assert_eq!(steps, ["data", "tail", "publish in tail", "complete"]);
    assert!(outcome.is_ok());
}

#[test]
fn publish_does_not_run_after_a_failed_tail() {
    let (steps, outcome) = run(true, Publish::Ok);
    assert_eq!(steps, ["data", "tail", "complete"]);
    assert!(outcome.is_err());
}

#[test]
fn a_failing_or_panicking_publish_completes_the_job_with_it() {
    let (steps, outcome) = run(false, Publish::Fails);
    assert_eq!(steps, ["data", "tail", "publish in tail", "complete"]);
    let e = outcome.unwrap_err();
    assert!(format!("{e:?}").contains("publish failed"), "{e:?}");
    let (_, outcome) = run(false, Publish::Panics);
    assert!(matches!(
        outcome,
        Err(Error::Panicked { phase: Phase::Tail, message }) if message == "publish panicked"
    ));
}
