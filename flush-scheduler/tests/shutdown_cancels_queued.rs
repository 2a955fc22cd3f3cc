//! Shutdown cancels queued jobs at once (their handles resolve `Cancelled`
//! and the jobs are handed back), waits for the running job, and rejects
//! later submissions without losing the job.

mod common;

use std::sync::Arc;

use common::{SimJob, Step, gate, log, open};
use flush_scheduler::{FlushError, FlushScheduler, JobKey, SchedulerConfig};

#[test]
fn queued_are_cancelled_and_running_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let scheduler =
        Arc::new(FlushScheduler::new(SchedulerConfig::new([dir.path()]).workers(1)).unwrap());
    let log = log();
    let g = gate();
    let running = scheduler
        .submit(Box::new(SimJob::new(1, &log).gated(&g)))
        .unwrap();
    log.wait_for(|l| l.len() == 1);
    let queued: Vec<_> = (2..=3)
        .map(|id| {
            let job = SimJob::new(id, &log).script([Step::FailJob]);
            scheduler.submit(Box::new(job)).unwrap()
        })
        .collect();

    let stopper = {
        let scheduler = Arc::clone(&scheduler);
        std::thread::spawn(move || scheduler.shutdown())
    };
    // The queued handles resolve while job 1 is still held at its gate.
    for h in &queued {
        assert!(matches!(h.wait(), Err(FlushError::Cancelled { key }) if key == h.key()));
    }
    assert!(
        running.try_result().is_none(),
        "the running job is not cancelled"
    );
    open(&g);
    let mut handed_back: Vec<_> = stopper.join().unwrap().iter().map(|j| j.key()).collect();
    handed_back.sort();
    assert_eq!(handed_back, [JobKey::new(2), JobKey::new(3)]);
    assert_eq!(running.wait().unwrap().attempts, 1);
    assert_eq!(log.get(Vec::len), 1, "no queued job ran");
    let m = scheduler.metrics();
    assert_eq!(
        (m.cancelled, m.completed, m.queued, m.running),
        (2, 1, 0, 0)
    );

    let rejected = scheduler
        .submit(Box::new(SimJob::new(4, &log)))
        .unwrap_err();
    assert!(matches!(rejected.error, FlushError::ShutDown { .. }));
    assert_eq!(
        rejected.job.key(),
        JobKey::new(4),
        "the rejected job is handed back"
    );
}
