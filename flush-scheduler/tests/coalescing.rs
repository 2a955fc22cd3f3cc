//! Submissions for a key that is already queued or running join that flush:
//! one job runs, and every handle sees its result.

mod common;

use common::{SimJob, gate, log, open};
use flush_scheduler::{FlushScheduler, JobKey, SchedulerConfig};

#[test]
fn duplicate_submissions_share_one_flush() {
    let dir = tempfile::tempdir().unwrap();
    let scheduler = FlushScheduler::new(SchedulerConfig::new([dir.path()]).workers(1)).unwrap();
    let log = log();
    let blocker = gate();
    let release = gate();

    // Occupy the only worker so key 2 stays queued.
    let first = scheduler
        .submit(Box::new(SimJob::new(1, &log).gated(&blocker)))
        .unwrap();
    log.wait_for(|l| l.len() == 1);
    let queued_a = scheduler
        .submit(Box::new(SimJob::new(2, &log).gated(&release)))
        .unwrap();
    let queued_b = scheduler.submit(Box::new(SimJob::new(2, &log))).unwrap();
    assert!(queued_a.same_flush(&queued_b), "coalesced while queued");
    assert!(!queued_a.same_flush(&first));

    open(&blocker);
    first.wait().unwrap();
    // Key 2 is now running (blocked on `release`): a third request joins it.
    log.wait_for(|l| l.len() == 2);
    let running = scheduler.submit(Box::new(SimJob::new(2, &log))).unwrap();
    assert!(running.same_flush(&queued_a), "coalesced while running");
    assert_eq!(scheduler.metrics().coalesced, 2);
    open(&release);

    let results: Vec<_> = [&queued_a, &queued_b, &running]
        .iter()
        .map(|h| h.wait().unwrap())
        .collect();
    assert!(results.iter().all(|r| *r == results[0]));
    assert_eq!(results[0].key, JobKey::new(2));
    assert_eq!(
        log.get(|l| l.iter().filter(|(id, ..)| *id == 2).count()),
        1,
        "one job ran for key 2"
    );
    let m = scheduler.metrics();
    assert_eq!((m.submitted, m.completed), (2, 2));

    // A flush that has completed is not joined: a new request runs again.
    let again = scheduler.submit(Box::new(SimJob::new(2, &log))).unwrap();
    assert!(!again.same_flush(&queued_a));
    again.wait().unwrap();
    assert!(scheduler.shutdown().is_empty());
}
