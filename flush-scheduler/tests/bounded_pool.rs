//! Each kind of worker is bounded on its own: never more data phases at
//! once than data workers, never more tails than tail workers.

mod common;

use common::{SimJob, gate, journal, open};
use flush_scheduler::{FlushScheduler, Phase, SchedulerConfig};

const DATA_WORKERS: usize = 2;
const TAIL_WORKERS: usize = 3;
const JOBS: u64 = 10;

#[test]
fn never_more_phases_at_once_than_workers_of_their_kind() {
    let dir = tempfile::tempdir().unwrap();
    let config = SchedulerConfig::new([dir.path()])
        .data_workers(DATA_WORKERS)
        .tail_workers(TAIL_WORKERS);
    let scheduler = FlushScheduler::new(config).unwrap();
    let journal = journal();
    let data_held = gate();
    let tails_held = gate();
    for id in 0..JOBS {
        let mut job = SimJob::new(id, &journal);
        job.data_gate = Some(data_held.clone());
        job.tail_gate = Some(tails_held.clone());
        scheduler.submit(job.boxed()).unwrap();
    }
    journal.wait_for(|j| j.count(Phase::Data) == DATA_WORKERS);
    let m = scheduler.metrics();
    assert_eq!(
        (m.running_data, m.queued_data),
        (DATA_WORKERS, JOBS as usize - DATA_WORKERS)
    );
    assert_eq!((m.running_tails, m.queued_tails), (0, 0));

    // Let the data phases through: the tails fill their workers and queue.
    open(&data_held);
    journal.wait_for(|j| {
        j.count(Phase::Data) == JOBS as usize && j.count(Phase::Tail) == TAIL_WORKERS
    });
    let m = scheduler.metrics();
    assert_eq!(m.running_tails, TAIL_WORKERS);
    assert!(m.queued_tails + m.running_data + m.queued_data <= JOBS as usize - TAIL_WORKERS);
    journal.get(|j| {
        assert_eq!(
            j.count(Phase::Tail),
            TAIL_WORKERS,
            "more tails than workers"
        )
    });

    open(&tails_held);
    journal.wait_for(|j| j.outcomes.len() == JOBS as usize);
    let m = scheduler.metrics();
    assert_eq!((m.submitted, m.completed, m.failed), (JOBS, JOBS, 0));
    assert!(scheduler.shutdown().is_empty());
}
