//! A job that opts out of the scheduler's retries (its owner retries by
//! itself) ends with its attempt's error: the scheduler neither retries it
//! nor keeps it, and a failed directory still cools down, so the owner's
//! resubmission goes to another directory.

mod common;

use common::{PATIENCE, SimJob, Step, fast_retry, log};
use flush_scheduler::{
    FlushContext, FlushError, FlushJob, FlushOutput, FlushScheduler, JobKey, SchedulerConfig,
};

/// A [`SimJob`] whose owner retries failures itself.
struct OwnerRetried(SimJob);

impl FlushJob for OwnerRetried {
    fn key(&self) -> JobKey {
        self.0.key()
    }

    fn run(&mut self, ctx: &FlushContext<'_>) -> Result<FlushOutput, FlushError> {
        self.0.run(ctx)
    }

    fn retry_on_failure(&self) -> bool {
        false
    }
}

#[test]
fn a_failed_attempt_ends_the_flush_and_the_owner_resubmits() {
    let dirs: Vec<_> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let paths: Vec<_> = dirs.iter().map(|d| d.path().to_path_buf()).collect();
    let config = SchedulerConfig::new(paths.clone())
        .workers(1)
        .retry(fast_retry());
    let scheduler = FlushScheduler::new(config).unwrap();
    let log = log();

    let job = SimJob::new(5, &log).script([Step::FailDirectory]);
    let dropped = std::sync::Arc::clone(&job.memtable.dropped);
    let handle = scheduler.submit(Box::new(OwnerRetried(job))).unwrap();
    let result = handle.wait_timeout(PATIENCE).expect("the flush resolved");
    assert!(
        matches!(&result, Err(FlushError::DirectoryFailed { path, .. }) if *path == paths[0]),
        "{result:?}"
    );
    assert_eq!(handle.attempts(), 1);
    dropped.wait_for(|d| *d); // the scheduler let go of the job
    let m = scheduler.metrics();
    assert_eq!((m.failed_attempts, m.retries, m.gave_up), (1, 0, 0));
    assert_eq!((m.backing_off, m.queued, m.running), (0, 0, 0));
    assert!(m.directories[0].cooling_down);
    assert!(scheduler.take_abandoned().is_empty());

    // The owner's own retry is a new flush, in the healthy directory.
    let again = scheduler
        .submit(Box::new(OwnerRetried(SimJob::new(5, &log))))
        .unwrap();
    assert!(!again.same_flush(&handle));
    assert_eq!(again.wait().unwrap().dir, paths[1]);
    assert!(scheduler.shutdown().is_empty());
}
