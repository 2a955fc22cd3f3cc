//! A cool-down too long to add to the current time ("skip a failed
//! directory for ever") is configuration, not a crash.

mod common;

use std::time::Duration;

use common::{SimJob, Step, journal};
use flush_scheduler::{FlushScheduler, SchedulerConfig};

#[test]
fn a_failed_directory_can_be_skipped_for_ever() {
    let dirs: Vec<_> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let paths: Vec<_> = dirs.iter().map(|d| d.path().to_path_buf()).collect();
    let config = SchedulerConfig::new(paths.clone()).directory_cooldown(Duration::MAX);
    let scheduler = FlushScheduler::new(config).unwrap();
    let journal = journal();
    let mut failing = SimJob::new(0, &journal);
    failing.data = Step::FailDirectory;
    scheduler.submit(failing.boxed()).unwrap();
    journal.wait_for(|j| j.outcome(0).is_some());
    for id in 1..=3 {
        scheduler.submit(SimJob::new(id, &journal).boxed()).unwrap();
        journal.wait_for(|j| j.outcome(id).is_some());
    }
    journal.get(|j| {
        assert!(j.started[1..].iter().all(|(_, _, dir)| *dir == paths[1]));
    });
    assert!(scheduler.metrics().directories[0].cooling_down);
    assert!(scheduler.shutdown().is_empty());
}
