//! Shutdown waits for the running phases, takes the queued jobs out of both
//! queues, and hands every unfinished job back with the phase it waits for;
//! `complete` is not called for them, and later submissions are rejected
//! with their job.

mod common;

use common::{SimJob, gate, journal, open};
use flush_scheduler::{Error, FlushScheduler, Phase, SchedulerConfig};

#[test]
fn unfinished_jobs_come_back_with_their_phase() {
    let dir = tempfile::tempdir().unwrap();
    let config = SchedulerConfig::new([dir.path()])
        .data_workers(1)
        .tail_workers(1);
    let scheduler = std::sync::Arc::new(FlushScheduler::new(config).unwrap());
    let journal = journal();
    let tail_held = gate();
    let data_held = gate();
    // Job 0 blocks the tail worker; job 1 waits in the tail queue; job 2
    // blocks the data worker; job 3 waits in the data queue.
    for id in 0..2 {
        let mut job = SimJob::new(id, &journal);
        job.tail_gate = Some(tail_held.clone());
        scheduler.submit(job.boxed()).unwrap();
    }
    journal.wait_for(|j| j.started(0, Phase::Tail) && j.count(Phase::Data) == 2);
    let mut running_data = SimJob::new(2, &journal);
    running_data.data_gate = Some(data_held.clone());
    scheduler.submit(running_data.boxed()).unwrap();
    scheduler.submit(SimJob::new(3, &journal).boxed()).unwrap();
    journal.wait_for(|j| j.started(2, Phase::Data));

    let stopper = {
        let scheduler = std::sync::Arc::clone(&scheduler);
        std::thread::spawn(move || scheduler.shutdown())
    };
    // Shutdown takes both queues at once, under the scheduler's lock, then
    // waits for the running phases. Both workers are held by their gates, so
    // the queues empty only when shutdown has taken them: wait for that
    // state (a bounded wait on an observable state, not on time), then let
    // the running phases end.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let m = scheduler.metrics();
        if m.queued_data == 0 && m.queued_tails == 0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "shutdown never took the queues"
        );
        std::thread::yield_now();
    }
    open(&data_held);
    open(&tail_held);
    let handed_back = stopper.join().unwrap();

    let mut phases: Vec<_> = handed_back.iter().map(|h| h.waiting_for).collect();
    phases.sort_by_key(|p| *p == Phase::Tail);
    // Job 3 never started; job 1 waited for its tail; job 2's data phase
    // ended during shutdown, so its tail was not started either.
    assert_eq!(phases, [Phase::Data, Phase::Tail, Phase::Tail]);
    journal.get(|j| {
        assert_eq!(j.outcomes.len(), 1, "only job 0 completed");
        assert!(matches!(j.outcome(0), Some(Ok(()))));
        assert!(!j.started(3, Phase::Data));
    });
    assert_eq!(scheduler.metrics().handed_back, 3);

    let rejected = scheduler
        .submit(SimJob::new(9, &journal).boxed())
        .unwrap_err();
    assert!(matches!(rejected.error, Error::ShutDown));
    assert!(
        scheduler.shutdown().is_empty(),
        "a second shutdown is empty"
    );
}
