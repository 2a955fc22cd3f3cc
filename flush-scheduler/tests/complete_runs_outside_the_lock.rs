//! `complete` runs the owner's code (it frees the flushed memtable, which
//! runs region listeners; it may submit the next flush) with no scheduler
//! lock held: it can use the scheduler, here by submitting another job from
//! inside `complete`.

mod common;

use std::sync::{Arc, OnceLock, Weak};

use common::{SharedJournal, SimJob, journal};
use flush_scheduler::{Error, FlushContext, FlushJob, FlushScheduler, SchedulerConfig};

/// Submits job 1 from its `complete`.
struct SubmitsFromComplete {
    scheduler: Arc<OnceLock<Weak<FlushScheduler>>>,
    journal: SharedJournal,
}

impl FlushJob for SubmitsFromComplete {
    fn write_data(&mut self, _ctx: &FlushContext<'_>) -> Result<(), Error> {
        Ok(())
    }

    fn complete(self: Box<Self>, outcome: Result<(), Error>) {
        outcome.unwrap();
        let scheduler = self.scheduler.get().and_then(Weak::upgrade).unwrap();
        scheduler
            .submit(SimJob::new(1, &self.journal).boxed())
            .unwrap();
    }
}

#[test]
fn complete_can_use_the_scheduler() {
    let dir = tempfile::tempdir().unwrap();
    let scheduler = Arc::new(FlushScheduler::new(SchedulerConfig::new([dir.path()])).unwrap());
    let cell = Arc::new(OnceLock::new());
    cell.set(Arc::downgrade(&scheduler)).unwrap();
    let journal = journal();
    scheduler
        .submit(Box::new(SubmitsFromComplete {
            scheduler: cell,
            journal: Arc::clone(&journal),
        }))
        .unwrap();
    journal.wait_for(|j| j.outcome(1).is_some());
    assert_eq!(scheduler.metrics().completed, 2);
    assert!(scheduler.shutdown().is_empty());
}
