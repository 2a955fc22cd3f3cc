//! A progress listener that panics on a failed attempt does not take the
//! worker (and the job it holds) down: the job is retried, its handle
//! resolves, and shutdown returns.

mod common;

use std::sync::Arc;

use common::{PATIENCE, SimJob, Step, fast_retry, log};
use flush_scheduler::{FlushError, FlushScheduler, JobKey, ProgressListener, SchedulerConfig};

struct PanicsOnFailure;

impl ProgressListener for PanicsOnFailure {
    fn on_written(&self, _key: JobKey, _bytes: u64) {}

    fn on_attempt_failed(&self, _key: JobKey, _written: u64, _error: &FlushError) {
        panic!("listener bug");
    }
}

#[test]
fn the_job_survives_a_listener_panic() {
    let dir = tempfile::tempdir().unwrap();
    let config = SchedulerConfig::new([dir.path()])
        .workers(1)
        .retry(fast_retry())
        .progress_listener(Arc::new(PanicsOnFailure));
    let scheduler = FlushScheduler::new(config).unwrap();
    let log = log();
    let job = SimJob::new(1, &log).script([Step::FailJob]);
    let dropped = Arc::clone(&job.memtable.dropped);
    let handle = scheduler.submit(Box::new(job)).unwrap();
    let report = handle
        .wait_timeout(PATIENCE)
        .expect("the flush resolved")
        .unwrap();
    assert_eq!(report.attempts, 2);
    dropped.wait_for(|d| *d);
    assert_eq!(scheduler.metrics().running, 0);
    assert!(scheduler.shutdown().is_empty());
}
