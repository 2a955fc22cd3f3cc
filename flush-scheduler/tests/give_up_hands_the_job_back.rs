//! With `max_attempts`, a job that keeps failing resolves its handles with
//! `GaveUp` and the job object (its memtable) is handed back, not dropped.

mod common;

use std::num::NonZeroU32;

use common::{SimJob, Step, fast_retry, log};
use flush_scheduler::{FlushError, FlushScheduler, JobKey, RetryPolicy, SchedulerConfig};

#[test]
fn gives_up_after_max_attempts_and_keeps_the_job() {
    let dir = tempfile::tempdir().unwrap();
    let retry = RetryPolicy {
        max_attempts: NonZeroU32::new(2),
        ..fast_retry()
    };
    let scheduler = FlushScheduler::new(SchedulerConfig::new([dir.path()]).retry(retry)).unwrap();
    let log = log();
    let job = SimJob::new(3, &log).script([Step::FailJob, Step::FailDirectory, Step::FailJob]);
    let dropped = std::sync::Arc::clone(&job.memtable.dropped);
    let handle = scheduler.submit(Box::new(job)).unwrap();

    let err = handle.wait().unwrap_err();
    let FlushError::GaveUp {
        key,
        attempts,
        last,
    } = &err
    else {
        panic!("expected GaveUp, got {err}");
    };
    assert_eq!((*key, *attempts), (JobKey::new(3), 2));
    assert!(last.is_directory_failure());
    assert!(err.to_string().contains("gave up after 2 failed attempts"));
    assert!(!dropped.get(|d| *d));

    let abandoned = scheduler.take_abandoned();
    assert_eq!(abandoned.len(), 1);
    assert_eq!(abandoned[0].key(), JobKey::new(3));
    let m = scheduler.metrics();
    assert_eq!(
        (m.failed_attempts, m.retries, m.gave_up, m.completed),
        (2, 1, 1, 0)
    );

    // The caller can resubmit it: its script has one failure left, then
    // it succeeds, and only then is the memtable released.
    let job = abandoned.into_iter().next().unwrap();
    let report = scheduler.submit(job).unwrap().wait().unwrap();
    assert_eq!(report.attempts, 2);
    assert!(scheduler.shutdown().is_empty());
    dropped.wait_for(|d| *d);
}
