//! The flush holding dirty-memory's data-write permit runs its data phase
//! on a data worker, which never runs tail work: with every tail worker
//! busy and more tails queued, a new job's data phase starts at once.
//! Deterministic: the tails block on a gate that opens only after the new
//! data phase was seen running.

mod common;

use common::{SimJob, gate, journal, open};
use flush_scheduler::{FlushScheduler, Phase, SchedulerConfig};

const TAIL_WORKERS: usize = 2;
const BUSY_JOBS: u64 = 4;

#[test]
fn a_data_phase_starts_while_every_tail_worker_is_busy() {
    let dir = tempfile::tempdir().unwrap();
    let config = SchedulerConfig::new([dir.path()])
        .data_workers(1)
        .tail_workers(TAIL_WORKERS);
    let scheduler = FlushScheduler::new(config).unwrap();
    let journal = journal();
    let tails_held = gate();
    for id in 0..BUSY_JOBS {
        let mut job = SimJob::new(id, &journal);
        job.tail_gate = Some(tails_held.clone());
        scheduler.submit(job.boxed()).unwrap();
    }
    // Every tail worker is busy, and every data phase has started.
    journal.wait_for(|j| {
        j.count(Phase::Tail) == TAIL_WORKERS && j.count(Phase::Data) == BUSY_JOBS as usize
    });

    // The permit holder's flush: its data phase starts without any tail
    // ending (they all wait for `tails_held`).
    let holder = BUSY_JOBS;
    scheduler
        .submit(SimJob::new(holder, &journal).boxed())
        .unwrap();
    journal.wait_for(|j| j.started(holder, Phase::Data));
    assert!(
        journal.get(|j| j.outcomes.is_empty()),
        "no tail had ended when the data phase started"
    );
    // The single data worker moved on to the holder, so every busy job is
    // in a tail: two running, the rest queued behind them (with the
    // holder's own tail, if its data phase is already over).
    let m = scheduler.metrics();
    assert_eq!(m.running_tails, TAIL_WORKERS);
    assert!(m.queued_tails >= BUSY_JOBS as usize - TAIL_WORKERS, "{m:?}");

    open(&tails_held);
    journal.wait_for(|j| j.outcomes.len() == BUSY_JOBS as usize + 1);
    journal.get(|j| assert!(j.outcomes.iter().all(|(_, r)| r.is_ok())));
    assert!(scheduler.shutdown().is_empty());
}
