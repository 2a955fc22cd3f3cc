//! A failing job is retried with backoff until it succeeds; its memtable is
//! alive at every attempt, the error is visible while it retries, and the
//! report counts the attempts.

mod common;

use common::{SimJob, Step, fast_retry, gate, log, open};
use flush_scheduler::{FlushError, FlushScheduler, SchedulerConfig};

#[test]
fn retried_until_success_with_the_memtable_kept() {
    let dir = tempfile::tempdir().unwrap();
    let config = SchedulerConfig::new([dir.path()])
        .workers(1)
        .retry(fast_retry());
    let scheduler = FlushScheduler::new(config).unwrap();
    let log = log();
    let g = gate();
    let job = SimJob::new(5, &log)
        .script([Step::FailJob, Step::FailJob, Step::FailJob])
        .gated(&g);
    let dropped = std::sync::Arc::clone(&job.memtable.dropped);
    let handle = scheduler.submit(Box::new(job)).unwrap();

    // Three attempts fail; the fourth is held at the gate.
    log.wait_for(|l| l.len() == 4);
    assert_eq!(handle.attempts(), 3);
    assert!(handle.try_result().is_none());
    assert!(matches!(
        handle.last_error(),
        Some(FlushError::JobFailed { .. })
    ));
    assert!(!dropped.get(|d| *d), "the memtable is kept while retrying");
    open(&g);

    let report = handle.wait().unwrap();
    assert_eq!(report.attempts, 4);
    assert_eq!(
        report.output.bytes_written, 100,
        "all the memtable's rows were written"
    );
    assert_eq!(
        log.get(|l| l.iter().map(|e| e.2).collect::<Vec<_>>()),
        [1, 2, 3, 4]
    );
    let m = scheduler.metrics();
    assert_eq!(
        (m.failed_attempts, m.retries, m.completed, m.gave_up),
        (3, 3, 1, 0)
    );
    assert!(m.last_error.is_some());
    // Bytes of failed attempts are counted too: 3 x 50 + 100.
    assert_eq!(m.bytes_written, 250);
    dropped.wait_for(|d| *d);
    scheduler.shutdown();
}
