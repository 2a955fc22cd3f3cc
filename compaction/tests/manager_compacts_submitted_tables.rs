//! The manager runs a submitted table's jobs until its strategy has none,
//! runs major compactions on demand, and counts what it did.

mod common;

use std::sync::{Arc, Mutex, mpsc};

use common::{TestTable, assert_clean, flush, job_options, live, read_all, view};
use compaction::{
    CompactionManager, Incremental, IncrementalOptions, ManagerConfig, ManualClock, SizeTiered,
    SstableSet,
};
use mutation::Mutation;

/// Where the table reports its swaps (removed, added).
type Swaps = mpsc::Receiver<(Vec<u64>, Vec<u64>)>;

fn table(
    dir: &std::path::Path,
    strategy: Box<dyn compaction::Strategy>,
) -> (Arc<TestTable>, Swaps, Vec<Mutation>) {
    let set = SstableSet::open(dir).unwrap();
    let mut written = Vec::new();
    for round in 0..4 {
        let batch: Vec<Mutation> = (0..30)
            .map(|k| live(&format!("k{k}"), round, 200))
            .collect();
        written.extend(batch.iter().cloned());
        flush(&set, batch);
    }
    let (swaps_tx, swaps) = mpsc::channel();
    let t = Arc::new(TestTable {
        set,
        strategy,
        options: job_options(Arc::new(ManualClock::new(1_000_000))),
        started: Mutex::new(None),
        swaps: Mutex::new(swaps_tx),
    });
    (t, swaps, written)
}

#[test]
fn a_submitted_table_is_compacted() {
    let dir = tempfile::tempdir().unwrap();
    let (t, swaps, written) = table(dir.path(), Box::new(SizeTiered::default()));
    let manager = CompactionManager::new(ManagerConfig::default()).unwrap();
    manager.submit(t.clone()).unwrap();
    let (removed, added) = swaps.recv().unwrap();
    assert_eq!((removed.len(), added.len()), (4, 1));
    manager.close();
    assert_eq!(t.set.snapshot().len(), 1);
    let m = manager.metrics();
    assert_eq!(m.jobs_completed, 1);
    assert!(m.bytes_read > m.bytes_written, "overwrites shrink: {m:?}");
    assert_eq!(
        view(&read_all(&t.set, &[]), 0),
        view(&Mutation::reconcile_all(written), 0)
    );
    assert_clean(dir.path(), &t.set);
}

#[test]
fn a_major_compaction_runs_on_demand() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = IncrementalOptions::default();
    o.fragment_size = 4096;
    o.tiering.min_threshold = 32;
    let (t, _swaps, written) = table(dir.path(), Box::new(Incremental::new(o).unwrap()));
    let manager = CompactionManager::new(ManagerConfig::default()).unwrap();
    // Below min_threshold: a submit does nothing ...
    manager.submit(t.clone()).unwrap();
    // ... a major compaction merges everything into one run.
    manager.major(t.clone()).unwrap();
    let snapshot = t.set.snapshot();
    assert!(snapshot.len() >= 2, "a run of several fragments");
    assert!(snapshot.infos().iter().all(|i| i.run.is_some()));
    drop(snapshot);
    manager.close();
    assert_eq!(
        view(&read_all(&t.set, &[]), 0),
        view(&Mutation::reconcile_all(written), 0)
    );
    assert_clean(dir.path(), &t.set);
}
