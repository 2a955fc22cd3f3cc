//! The pool never runs more jobs at once than it has workers: every job
//! checks the number of running jobs when it starts and when it ends.

mod common;

use std::sync::Arc;

use common::{Gate, Watched, gate, open};
use flush_scheduler::{
    FlushContext, FlushError, FlushJob, FlushOutput, FlushScheduler, JobKey, SchedulerConfig,
};

const WORKERS: usize = 3;

#[derive(Debug, Default)]
struct Concurrency {
    running: usize,
    max: usize,
    finished: usize,
}

struct CountedJob {
    id: u64,
    counts: Arc<Watched<Concurrency>>,
    gate: Gate,
}

impl FlushJob for CountedJob {
    fn key(&self) -> JobKey {
        JobKey::new(self.id)
    }

    fn run(&mut self, _ctx: &FlushContext<'_>) -> Result<FlushOutput, FlushError> {
        self.counts.update(|c| {
            c.running += 1;
            c.max = c.max.max(c.running);
            assert!(
                c.running <= WORKERS,
                "{} jobs running with {WORKERS} workers",
                c.running
            );
        });
        self.gate.wait_for(|open| *open);
        self.counts.update(|c| {
            assert!(c.running <= WORKERS);
            c.running -= 1;
            c.finished += 1;
        });
        Ok(FlushOutput::default())
    }
}

#[test]
fn never_more_than_n_jobs_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let scheduler =
        FlushScheduler::new(SchedulerConfig::new([dir.path()]).workers(WORKERS)).unwrap();
    let counts = Watched::new(Concurrency::default());
    let g = gate();
    let handles: Vec<_> = (0..10)
        .map(|id| {
            let job = CountedJob {
                id,
                counts: Arc::clone(&counts),
                gate: Arc::clone(&g),
            };
            scheduler.submit(Box::new(job)).unwrap()
        })
        .collect();
    counts.wait_for(|c| c.running == WORKERS);
    let m = scheduler.metrics();
    assert_eq!((m.running, m.queued), (WORKERS, 10 - WORKERS));
    open(&g);
    for h in &handles {
        h.wait().unwrap();
    }
    counts.get(|c| {
        assert_eq!(c.finished, 10);
        assert_eq!(c.max, WORKERS);
    });
    assert_eq!(scheduler.metrics().completed, 10);
    scheduler.shutdown();
}
