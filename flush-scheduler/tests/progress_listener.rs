//! The progress listener sees every written byte and every failed attempt,
//! so the caller can keep "virtual dirty" accounting exact.

mod common;

use std::sync::Arc;

use common::{SimJob, Step, Watched, fast_retry, log};
use flush_scheduler::{FlushError, FlushScheduler, JobKey, ProgressListener, SchedulerConfig};

/// Spooled bytes per key: written bytes minus those of failed attempts.
struct Spooled(Arc<Watched<Vec<i64>>>);

impl ProgressListener for Spooled {
    fn on_written(&self, key: JobKey, bytes: u64) {
        self.0.update(|v| v[key.get() as usize] += bytes as i64);
    }

    fn on_attempt_failed(&self, key: JobKey, written: u64, _error: &FlushError) {
        self.0.update(|v| v[key.get() as usize] -= written as i64);
    }
}

#[test]
fn failed_attempts_revert_their_progress() {
    let dir = tempfile::tempdir().unwrap();
    let spooled = Watched::new(vec![0i64; 3]);
    let config = SchedulerConfig::new([dir.path()])
        .retry(fast_retry())
        .progress_listener(Arc::new(Spooled(Arc::clone(&spooled))));
    let scheduler = FlushScheduler::new(config).unwrap();
    let log = log();
    let handles: Vec<_> = (0..3)
        .map(|id| {
            let job = SimJob::new(id, &log).script(vec![Step::FailJob; id as usize]);
            scheduler.submit(Box::new(job)).unwrap()
        })
        .collect();
    for h in &handles {
        assert_eq!(h.wait().unwrap().output.bytes_written, 100);
    }
    assert_eq!(spooled.get(Clone::clone), [100, 100, 100]);
    scheduler.shutdown();
}
