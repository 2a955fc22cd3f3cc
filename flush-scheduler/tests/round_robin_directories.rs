//! Attempts are spread over the flush directories round-robin, and the
//! per-directory metrics count them.

mod common;

use common::{SimJob, log};
use flush_scheduler::{FlushScheduler, SchedulerConfig};

#[test]
fn jobs_rotate_over_the_flush_directories() {
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let paths: Vec<_> = dirs.iter().map(|d| d.path().to_path_buf()).collect();
    let scheduler = FlushScheduler::new(SchedulerConfig::new(paths.clone()).workers(1)).unwrap();
    let log = log();
    let used: Vec<_> = (0..6)
        .map(|id| {
            let h = scheduler.submit(Box::new(SimJob::new(id, &log))).unwrap();
            h.wait().unwrap().dir
        })
        .collect();
    let expected: Vec<_> = (0..6).map(|i| paths[i % 3].clone()).collect();
    assert_eq!(used, expected);
    let m = scheduler.metrics();
    for d in &m.directories {
        assert_eq!((d.attempts, d.completed, d.failures), (2, 2, 0));
        assert_eq!(d.bytes_written, 200);
        assert!(!d.cooling_down);
    }
    assert_eq!(m.bytes_written, 600);
    scheduler.shutdown();
}
