//! A job that succeeded is dropped after the scheduler's lock is released.
//!
//! Dropping a job releases what it holds (the flushed memtable: freeing its
//! segments runs region listener callbacks, a region group's soft-limit
//! callbacks, and so on). That code must be free to use the scheduler, and
//! must not stall every other worker and submitter while it runs.

mod common;

use std::sync::mpsc;
use std::sync::{Arc, OnceLock, Weak};

use common::PATIENCE;
use flush_scheduler::{
    FlushContext, FlushError, FlushJob, FlushOutput, FlushScheduler, JobKey, SchedulerConfig,
};

/// Where a job's drop finds the scheduler.
type SchedulerCell = Arc<OnceLock<Weak<FlushScheduler>>>;

/// A job whose drop reads the scheduler's metrics on another thread and
/// reports whether that finished within [`PATIENCE`] (it cannot while the
/// dropping worker holds the scheduler's lock).
struct UsesSchedulerOnDrop {
    scheduler: SchedulerCell,
    seen: mpsc::Sender<bool>,
}

impl FlushJob for UsesSchedulerOnDrop {
    fn key(&self) -> JobKey {
        JobKey::new(1)
    }

    fn run(&mut self, _ctx: &FlushContext<'_>) -> Result<FlushOutput, FlushError> {
        Ok(FlushOutput::default())
    }
}

impl Drop for UsesSchedulerOnDrop {
    fn drop(&mut self) {
        let Some(scheduler) = self.scheduler.get().and_then(Weak::upgrade) else {
            return;
        };
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(scheduler.metrics().running);
        });
        let _ = self.seen.send(rx.recv_timeout(PATIENCE).is_ok());
    }
}

#[test]
fn a_finished_job_is_dropped_without_the_scheduler_lock() {
    let dir = tempfile::tempdir().unwrap();
    let scheduler =
        Arc::new(FlushScheduler::new(SchedulerConfig::new([dir.path()]).workers(1)).unwrap());
    let cell = SchedulerCell::default();
    cell.set(Arc::downgrade(&scheduler)).unwrap();
    let (seen, dropped) = mpsc::channel();
    let handle = scheduler
        .submit(Box::new(UsesSchedulerOnDrop {
            scheduler: Arc::clone(&cell),
            seen,
        }))
        .unwrap();
    handle.wait().unwrap();
    assert_eq!(
        dropped.recv_timeout(PATIENCE),
        Ok(true),
        "the scheduler was usable while the finished job was dropped"
    );
    assert!(scheduler.shutdown().is_empty());
}
