//! Durations too long to add to the current time ("skip a failed directory
//! for ever", "back off for ever") are configuration, not a crash: the
//! worker saturates the deadline instead of panicking with the job in hand.

mod common;

use std::time::Duration;

use common::{PATIENCE, SimJob, Step, fast_retry, log};
use flush_scheduler::{FlushScheduler, RetryPolicy, SchedulerConfig};

#[test]
fn a_failed_directory_can_be_skipped_for_ever() {
    let dirs: Vec<_> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let paths: Vec<_> = dirs.iter().map(|d| d.path().to_path_buf()).collect();
    let config = SchedulerConfig::new(paths.clone())
        .workers(1)
        .retry(fast_retry())
        .directory_cooldown(Duration::MAX);
    let scheduler = FlushScheduler::new(config).unwrap();
    let log = log();
    let handle = scheduler
        .submit(Box::new(SimJob::new(0, &log).script([Step::FailDirectory])))
        .unwrap();
    let report = handle
        .wait_timeout(PATIENCE)
        .expect("the flush resolved")
        .unwrap();
    assert_eq!((report.attempts, &report.dir), (2, &paths[1]));
    assert!(scheduler.metrics().directories[0].cooling_down);
    assert!(scheduler.shutdown().is_empty());
}

#[test]
fn a_backoff_too_long_to_add_to_now_waits_until_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let config = SchedulerConfig::new([dir.path()])
        .workers(1)
        .retry(RetryPolicy {
            initial_backoff: Duration::MAX,
            max_backoff: Duration::MAX,
            max_attempts: None,
        });
    let scheduler = FlushScheduler::new(config).unwrap();
    let log = log();
    let handle = scheduler
        .submit(Box::new(SimJob::new(0, &log).script([Step::FailJob])))
        .unwrap();
    let failed =
        |s: &FlushScheduler| s.metrics().failed_attempts == 1 && s.metrics().backing_off == 1;
    let deadline = std::time::Instant::now() + PATIENCE;
    while !failed(&scheduler) {
        assert!(
            std::time::Instant::now() < deadline,
            "the attempt failed and backs off"
        );
        std::thread::yield_now();
    }
    let jobs = scheduler.shutdown();
    assert_eq!(jobs.len(), 1, "the job is handed back, not lost");
    assert!(handle.wait_timeout(PATIENCE).expect("resolved").is_err());
}
