//! A job waiting out a long retry backoff does not hold up shutdown: the
//! wait is a condition-variable wait that shutdown interrupts, the job is
//! cancelled and handed back, and no further attempt runs.

mod common;

use std::sync::mpsc;
use std::time::Duration;

use common::{PATIENCE, SimJob, Step, log};
use flush_scheduler::{FlushError, FlushScheduler, JobKey, RetryPolicy, SchedulerConfig};

#[test]
fn shutdown_does_not_wait_for_a_backoff() {
    let dir = tempfile::tempdir().unwrap();
    let hour = Duration::from_secs(3600);
    let retry = RetryPolicy {
        initial_backoff: hour,
        max_backoff: hour,
        max_attempts: None,
    };
    let scheduler = FlushScheduler::new(SchedulerConfig::new([dir.path()]).retry(retry)).unwrap();
    let log = log();
    let handle = scheduler
        .submit(Box::new(SimJob::new(1, &log).script([Step::FailJob])))
        .unwrap();
    log.wait_for(|l| l.len() == 1);

    // Whether shutdown finds the attempt still running or already backing
    // off, it must return long before the hour is up.
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || tx.send(scheduler.shutdown()).unwrap());
    let handed_back = rx
        .recv_timeout(PATIENCE)
        .expect("shutdown returned promptly");
    assert_eq!(handed_back.len(), 1);
    assert_eq!(handed_back[0].key(), JobKey::new(1));
    assert!(matches!(handle.wait(), Err(FlushError::Cancelled { .. })));
    assert!(matches!(
        handle.last_error(),
        Some(FlushError::JobFailed { .. })
    ));
    assert_eq!(log.get(Vec::len), 1, "no retry ran");
}
