//! Jobs are spread over the flush directories round-robin; a job's tail
//! runs in the directory of its data phase; per-directory metrics count
//! them.

mod common;

use common::{SimJob, journal};
use flush_scheduler::{FlushScheduler, Phase, SchedulerConfig};

#[test]
fn jobs_rotate_over_the_flush_directories() {
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let paths: Vec<_> = dirs.iter().map(|d| d.path().to_path_buf()).collect();
    let scheduler = FlushScheduler::new(SchedulerConfig::new(paths.clone())).unwrap();
    let journal = journal();
    for id in 0..6 {
        scheduler.submit(SimJob::new(id, &journal).boxed()).unwrap();
        journal.wait_for(|j| j.outcome(id).is_some());
    }
    journal.get(|j| {
        for (id, phase, dir) in &j.started {
            assert_eq!(*dir, paths[*id as usize % 3], "job {id}, {phase} phase");
        }
        assert_eq!(j.count(Phase::Tail), 6);
    });
    let m = scheduler.metrics();
    for d in &m.directories {
        assert_eq!((d.jobs, d.completed, d.failures), (2, 2, 0));
        assert!(!d.cooling_down);
    }
    assert!(scheduler.shutdown().is_empty());
}
