//! An expired TTL cell whose shadowed older value sits in an sstable
//! outside the job never brings that value back: while the older value is
//! outside, the job keeps the expired cell (it may not be purged, and it is
//! not rewritten as a tombstone, since data as old may sit outside); once
//! the older value is in the job too, both go. With nothing outside, an
//! expired cell still within gc_grace becomes a cell tombstone of its
//! write time (`expiry - ttl`), its value dropped.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{flush, job_options, read_all, view};
use compaction::{JobPlan, ManualClock, NothingOutside, SstableSet, Unthrottled, run_job};
use mutation::{Cell, DecoratedKey, Fragment, Mutation, Timestamp, Ttl};

fn key(name: &str) -> DecoratedKey {
    DecoratedKey::from_bytes(name.to_owned()).unwrap()
}

fn older_value(k: &str) -> Mutation {
    Mutation::builder(key(k))
        .cell("r", 0, Cell::live("older", Timestamp::from_micros(1)))
        .build()
        .unwrap()
}

/// Written at 100 with a TTL of 10: expired from 110.
fn expiring(k: &str) -> Mutation {
    Mutation::builder(key(k))
        .cell(
            "r",
            0,
            Cell::expiring(
                "expiring",
                Timestamp::from_micros(5),
                Ttl::new(10, 110).unwrap(),
            ),
        )
        .build()
        .unwrap()
}

fn other(ts: i64) -> Mutation {
    Mutation::builder(key("other"))
        .cell("r", 0, Cell::live("x", Timestamp::from_micros(ts)))
        .build()
        .unwrap()
}

fn all_generations(set: &SstableSet) -> Vec<u64> {
    set.snapshot()
        .infos()
        .iter()
        .map(|i| i.generation)
        .collect()
}

#[test]
fn the_older_value_outside_the_job_never_comes_back() {
    let dir = tempfile::tempdir().unwrap();
    let set = SstableSet::open(dir.path()).unwrap();
    // gc_grace 0, long after the expiry: purgeable as far as time goes.
    let options = job_options(Arc::new(ManualClock::new(1_000)));
    let outside = flush(&set, vec![older_value("k")]);
    let a = flush(&set, vec![expiring("k")]);
    let b = flush(&set, vec![other(7)]);
    let plan = JobPlan {
        inputs: vec![a, b],
        fragment_size: None,
    };
    let report = run_job(&set, &plan, &options, &NothingOutside, &Unthrottled).unwrap();
    assert_eq!(report.purged.expired, 0, "the older value is outside");
    assert_eq!(report.purged.expired_to_tombstones, 0);
    let read = view(&read_all(&set, &[]), 1_000);
    assert!(!read.contains_key("k/r/0"), "resurrected: {read:?}");
    assert!(
        set.snapshot()
            .handles()
            .iter()
            .any(|h| h.generation() == outside)
    );

    // Compacting the expired cell again, alone, changes nothing.
    let output = report.outputs.clone();
    let plan = JobPlan {
        inputs: output,
        fragment_size: Some(4096),
    };
    let report = run_job(&set, &plan, &options, &NothingOutside, &Unthrottled).unwrap();
    assert_eq!(report.purged.expired, 0);
    assert!(!view(&read_all(&set, &[]), 1_000).contains_key("k/r/0"));

    // With the older value in the job, the expired cell and what it
    // shadows both go.
    let plan = JobPlan {
        inputs: all_generations(&set),
        fragment_size: None,
    };
    let report = run_job(&set, &plan, &options, &NothingOutside, &Unthrottled).unwrap();
    assert_eq!(report.purged.expired, 1);
    let snapshot = set.snapshot();
    assert_eq!(snapshot.len(), 1);
    assert_eq!(
        snapshot.handles()[0]
            .sstable()
            .read_partition(&key("k"))
            .unwrap(),
        None
    );
    assert!(!view(&read_all(&set, &[]), 1_000).contains_key("k/r/0"));
}

#[test]
fn within_gc_grace_an_expired_cell_becomes_a_tombstone_of_its_write_time() {
    let dir = tempfile::tempdir().unwrap();
    let set = SstableSet::open(dir.path()).unwrap();
    let mut options = job_options(Arc::new(ManualClock::new(150)));
    options.gc_grace = Duration::from_secs(100);
    let a = flush(&set, vec![expiring("k")]);
    let b = flush(&set, vec![other(7)]);
    let plan = JobPlan {
        inputs: vec![a, b],
        fragment_size: None,
    };
    let report = run_job(&set, &plan, &options, &NothingOutside, &Unthrottled).unwrap();
    assert_eq!(report.purged.expired_to_tombstones, 1);
    assert_eq!(report.purged.expired, 0);
    let snapshot = set.snapshot();
    let fragments = snapshot.handles()[0]
        .sstable()
        .read_partition(&key("k"))
        .unwrap()
        .expect("the tombstone is kept");
    let tombstone = Mutation::builder(key("k"))
        .cell("r", 0, Cell::tombstone(Timestamp::from_micros(5), 100))
        .build()
        .unwrap();
    assert_eq!(fragments, tombstone.fragments());
    assert!(
        fragments
            .iter()
            .all(|f| !matches!(f, Fragment::ClusteringRow { row, .. }
            if row.cells.values().any(|c| matches!(c, Cell::Live { .. })))),
        "the value is gone"
    );
    drop(snapshot);

    // Past gc_grace of its write time, the tombstone is purged.
    let mut later = options.clone();
    later.clock = Arc::new(ManualClock::new(201));
    let plan = JobPlan {
        inputs: all_generations(&set),
        fragment_size: None,
    };
    let report = run_job(&set, &plan, &later, &NothingOutside, &Unthrottled).unwrap();
    assert_eq!(report.purged.cell_tombstones, 1);
    assert_eq!(
        set.snapshot().handles()[0]
            .sstable()
            .read_partition(&key("k"))
            .unwrap(),
        None
    );
}
