//! A panic in a phase completes its job with `Error::Panicked` naming the
//! phase; a panic in `complete` is caught too; the workers live on and run
//! the next jobs.

mod common;

use common::{SimJob, Step, journal};
use flush_scheduler::{Error, FlushContext, FlushJob, FlushScheduler, Phase, SchedulerConfig};

#[test]
fn a_panicking_phase_completes_its_job_with_the_panic() {
    let dir = tempfile::tempdir().unwrap();
    let scheduler = FlushScheduler::new(SchedulerConfig::new([dir.path()])).unwrap();
    let journal = journal();
    let mut in_data = SimJob::new(0, &journal);
    in_data.data = Step::Panic;
    let mut in_tail = SimJob::new(1, &journal);
    in_tail.tail = Step::Panic;
    scheduler.submit(in_data.boxed()).unwrap();
    scheduler.submit(in_tail.boxed()).unwrap();
    scheduler.submit(SimJob::new(2, &journal).boxed()).unwrap();
    journal.wait_for(|j| j.outcomes.len() == 3);
    journal.get(|j| {
        assert!(matches!(
            j.outcome(0),
            Some(Err(Error::Panicked { phase: Phase::Data, message })) if message == "simulated panic in job 0"
        ));
        assert!(!j.started(0, Phase::Tail), "no tail after a failed data phase");
        assert!(matches!(
            j.outcome(1),
            Some(Err(Error::Panicked { phase: Phase::Tail, .. }))
        ));
        assert!(matches!(j.outcome(2), Some(Ok(()))));
    });
    let m = scheduler.metrics();
    assert_eq!((m.completed, m.failed, m.panicked), (1, 2, 2));
    assert!(scheduler.shutdown().is_empty());
}

/// Panics when told its outcome.
struct PanicsInComplete;

impl FlushJob for PanicsInComplete {
    fn write_data(&mut self, _ctx: &FlushContext<'_>) -> Result<(), Error> {
        Ok(())
    }

    fn complete(self: Box<Self>, _outcome: Result<(), Error>) {
        panic!("owner bug");
    }
}

#[test]
fn a_panic_in_complete_does_not_kill_the_worker() {
    let dir = tempfile::tempdir().unwrap();
    let config = SchedulerConfig::new([dir.path()])
        .data_workers(1)
        .tail_workers(1);
    let scheduler = FlushScheduler::new(config).unwrap();
    scheduler.submit(Box::new(PanicsInComplete)).unwrap();
    let journal = journal();
    scheduler.submit(SimJob::new(1, &journal).boxed()).unwrap();
    // The only tail worker ran the panicking `complete` first.
    journal.wait_for(|j| j.outcome(1).is_some());
    assert_eq!(scheduler.metrics().completed, 2);
    assert!(scheduler.shutdown().is_empty());
}
