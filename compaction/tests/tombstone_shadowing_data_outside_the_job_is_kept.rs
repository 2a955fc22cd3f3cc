//! A tombstone past gc_grace is kept while older data for its key sits
//! outside the job (in an sstable not compacted, or in a memtable), and
//! dropped once everything it shadows is in the job.

mod common;

use std::sync::Arc;

use common::{Memtable, flush, job_options, read_all, view};
use compaction::{JobPlan, ManualClock, NothingOutside, SstableSet, Unthrottled, run_job};
use mutation::{Cell, DecoratedKey, Mutation, Timestamp, Tombstone};

fn key() -> DecoratedKey {
    DecoratedKey::from_bytes("deleted").unwrap()
}

fn old_data() -> Mutation {
    Mutation::builder(key())
        .cell("r", 0, Cell::live("old", Timestamp::from_micros(1)))
        .build()
        .unwrap()
}

fn deletion() -> Mutation {
    Mutation::builder(key())
        .partition_tombstone(Tombstone::new(Timestamp::from_micros(5), 100))
        .build()
        .unwrap()
}

fn other(ts: i64) -> Mutation {
    Mutation::builder(DecoratedKey::from_bytes("other").unwrap())
        .cell("r", 0, Cell::live("x", Timestamp::from_micros(ts)))
        .build()
        .unwrap()
}

#[test]
fn kept_while_an_sstable_outside_the_job_holds_older_data() {
    let dir = tempfile::tempdir().unwrap();
    let set = SstableSet::open(dir.path()).unwrap();
    let options = job_options(Arc::new(ManualClock::new(1_000)));
    let outside = flush(&set, vec![old_data()]);
    let a = flush(&set, vec![deletion()]);
    let b = flush(&set, vec![other(7)]);
    let plan = JobPlan {
        inputs: vec![a, b],
        fragment_size: None,
    };
    let report = run_job(&set, &plan, &options, &NothingOutside, &Unthrottled).unwrap();
    assert_eq!(report.purged.partition_tombstones, 0);
    let all = [old_data(), deletion(), other(7)];
    assert_eq!(
        view(&read_all(&set, &[]), 1_000),
        view(&Mutation::reconcile_all(all.clone()), 1_000)
    );
    assert!(!view(&read_all(&set, &[]), 1_000).contains_key("deleted/r/0"));

    // With the old data in the job too, the tombstone and what it shadows go.
    let inputs = set
        .snapshot()
        .infos()
        .iter()
        .map(|i| i.generation)
        .collect();
    assert!(
        set.snapshot()
            .handles()
            .iter()
            .any(|h| h.generation() == outside)
    );
    let plan = JobPlan {
        inputs,
        fragment_size: None,
    };
    let report = run_job(&set, &plan, &options, &NothingOutside, &Unthrottled).unwrap();
    assert_eq!(report.purged.partition_tombstones, 1);
    let snapshot = set.snapshot();
    assert_eq!(snapshot.len(), 1);
    assert_eq!(
        snapshot.handles()[0]
            .sstable()
            .read_partition(&key())
            .unwrap(),
        None
    );
}

#[test]
fn kept_while_a_memtable_holds_older_data() {
    let dir = tempfile::tempdir().unwrap();
    let set = SstableSet::open(dir.path()).unwrap();
    let options = job_options(Arc::new(ManualClock::new(1_000)));
    let a = flush(&set, vec![deletion()]);
    // An old write (a late client timestamp) waiting in the memtable.
    let memtable = Memtable(vec![old_data()]);
    let plan = JobPlan {
        inputs: vec![a],
        fragment_size: Some(4096),
    };
    let report = run_job(&set, &plan, &options, &memtable, &Unthrottled).unwrap();
    assert_eq!(report.purged.partition_tombstones, 0);
    assert!(!view(&read_all(&set, &memtable.0), 1_000).contains_key("deleted/r/0"));
    // Within gc_grace nothing goes even with nothing outside.
    let mut young = job_options(Arc::new(ManualClock::new(100)));
    young.gc_grace = std::time::Duration::from_secs(10);
    let inputs = set
        .snapshot()
        .infos()
        .iter()
        .map(|i| i.generation)
        .collect();
    let plan = JobPlan {
        inputs,
        fragment_size: None,
    };
    let report = run_job(&set, &plan, &young, &NothingOutside, &Unthrottled).unwrap();
    assert_eq!(report.purged.partition_tombstones, 0);
}
