//! `close` stops a running job promptly, even one waiting on the
//! bandwidth limit: its inputs stay intact, its partial outputs are
//! removed, and later work is refused.

mod common;

use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use common::{TestTable, assert_clean, flush, job_options, noise, read_all, view};
use compaction::{CompactionManager, Error, ManagerConfig, ManualClock, SizeTiered, SstableSet};
use mutation::{Cell, DecoratedKey, Mutation, Timestamp};

#[test]
fn close_stops_a_throttled_job_and_keeps_its_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let set = SstableSet::open(dir.path()).unwrap();
    let clock = Arc::new(ManualClock::new(1_000_000));
    let mut written = Vec::new();
    for round in 0..4i64 {
        let batch: Vec<Mutation> = (0..100u64)
            .map(|k| {
                Mutation::builder(DecoratedKey::from_bytes(format!("k{k}")).unwrap())
                    .cell(
                        "r",
                        0,
                        Cell::live(
                            noise(k + 1000 * round as u64, 300),
                            Timestamp::from_micros(round + 10),
                        ),
                    )
                    // An old cell tombstone: the job asks about purging at once.
                    .cell(
                        "r",
                        1,
                        Cell::tombstone(Timestamp::from_micros(round + 10), 5),
                    )
                    .build()
                    .unwrap()
            })
            .collect();
        written.extend(batch.iter().cloned());
        flush(&set, batch);
    }
    let expected = view(&Mutation::reconcile_all(written), 1_000_000);
    let (started_tx, started) = mpsc::channel();
    let (swaps_tx, swaps) = mpsc::channel();
    let table = Arc::new(TestTable {
        set,
        strategy: Box::new(SizeTiered::default()),
        options: job_options(clock),
        started: Mutex::new(Some(started_tx)),
        swaps: Mutex::new(swaps_tx),
    });
    let mut config = ManagerConfig::default();
    // 100 bytes per second at the backlog's minimum share: the job would
    // take minutes.
    config.bandwidth = Some(1000);
    let manager = CompactionManager::new(config).unwrap();
    manager.submit(table.clone()).unwrap();
    started.recv().unwrap();
    let t = Instant::now();
    manager.close();
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "close took {:?}",
        t.elapsed()
    );
    let m = manager.metrics();
    assert_eq!(
        (m.jobs_stopped, m.jobs_completed, m.running_jobs),
        (1, 0, 0)
    );
    assert!(swaps.try_recv().is_err(), "nothing was swapped");
    assert_eq!(table.set.snapshot().len(), 4);
    assert_eq!(view(&read_all(&table.set, &[]), 1_000_000), expected);
    assert_clean(dir.path(), &table.set);
    assert!(matches!(manager.submit(table.clone()), Err(Error::Closed)));
    assert!(matches!(manager.major(table), Err(Error::Closed)));
}
