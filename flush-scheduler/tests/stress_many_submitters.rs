//! Many threads submit jobs, some failing in one phase or the other: every
//! job is completed exactly once, its tail runs only after its data phase
//! succeeded and in the same directory, the worker bounds hold, and the
//! counters add up. Bounded by a count of submissions, not by time.

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use common::{SimJob, Step, journal};
use flush_scheduler::{FlushScheduler, Phase, SchedulerConfig};

const THREADS: u64 = 4;
const PER_THREAD: u64 = 150;

#[test]
fn every_job_completes_once_with_its_phases_in_order() {
    let dirs: Vec<_> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let config = SchedulerConfig::new(dirs.iter().map(|d| d.path()))
        .data_workers(1)
        .tail_workers(2)
        .directory_cooldown(std::time::Duration::ZERO);
    let scheduler = Arc::new(FlushScheduler::new(config).unwrap());
    let journal = journal();
    let submitters: Vec<_> = (0..THREADS)
        .map(|t| {
            let scheduler = Arc::clone(&scheduler);
            let journal = Arc::clone(&journal);
            std::thread::spawn(move || {
                for i in 0..PER_THREAD {
                    let id = t * PER_THREAD + i;
                    let mut job = SimJob::new(id, &journal);
                    match id % 7 {
                        3 => job.data = Step::FailJob,
                        5 => job.tail = Step::FailDirectory,
                        _ => {}
                    }
                    scheduler.submit(job.boxed()).unwrap();
                }
            })
        })
        .collect();
    for s in submitters {
        s.join().unwrap();
    }
    let total = THREADS * PER_THREAD;
    journal.wait_for(|j| j.outcomes.len() == total as usize);
    let m = scheduler.metrics();
    assert!(scheduler.shutdown().is_empty());

    journal.get(|j| {
        let mut outcomes: HashMap<u64, usize> = HashMap::new();
        for (id, outcome) in &j.outcomes {
            *outcomes.entry(*id).or_default() += 1;
            assert_eq!(outcome.is_err(), id % 7 == 3 || id % 7 == 5, "job {id}");
        }
        assert!(outcomes.values().all(|n| *n == 1), "a job completed twice");
        let mut data_dir = HashMap::new();
        for (id, phase, dir) in &j.started {
            match phase {
                Phase::Data => assert!(data_dir.insert(*id, dir.clone()).is_none()),
                Phase::Tail => {
                    assert_eq!(data_dir.get(id), Some(dir), "tail of {id} before its data");
                    assert_ne!(id % 7, 3, "tail of {id} after a failed data phase");
                }
            }
        }
    });
    let failed = (0..total).filter(|id| id % 7 == 3 || id % 7 == 5).count() as u64;
    assert_eq!(
        (m.submitted, m.completed, m.failed),
        (total, total - failed, failed)
    );
}
