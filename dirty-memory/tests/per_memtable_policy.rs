//! The pre-2016 policy, selectable at run time: each memtable flushes when
//! it alone reaches a fraction of the budget, several at once.

mod common;

use common::{QueueTarget, complete, id, manual, memtable};
use dirty_memory::{Error, FlushPolicy};
use logalloc::RegionListener;

const LEGACY: FlushPolicy = FlushPolicy::PerMemtableLimit {
    max_memtable_fraction: 0.1,
    max_concurrent_flushes: 3,
};

#[test]
fn memtables_flush_at_their_own_size_limit_several_at_once() {
    let target = QueueTarget::new();
    let m = manual(1000, target.clone()); // max memtable 100 bytes
    m.set_policy(LEGACY).unwrap();
    assert_eq!(m.policy(), LEGACY);
    // Total 99 + 99 far below the soft limit (250): the old policy still
    // waits for a memtable to reach its size.
    memtable(m.group(), 1, 99);
    memtable(m.group(), 2, 99);
    assert_eq!(m.poll_flushes().unwrap(), 0);
    // Four memtables reach 100: three flush at once (the concurrency bound),
    // although the total (400+) is far from what the new policy waits for.
    for r in 1..=2 {
        m.group().increase_usage(id(r), 1);
    }
    memtable(m.group(), 3, 100);
    memtable(m.group(), 4, 120);
    assert_eq!(m.poll_flushes().unwrap(), 3);
    assert_eq!(m.metrics().writing.len(), 3);
    assert_eq!(m.metrics().max_concurrent_data_writers, 3);
    let first = target.next();
    assert_eq!(first.region(), id(4), "largest first");
    complete(first);
    assert_eq!(
        m.poll_flushes().unwrap(),
        1,
        "the fourth starts when a slot frees"
    );
    while let Some(f) = target.try_next() {
        complete(f);
    }
    assert_eq!(m.metrics().flushes_completed, 4);
}

#[test]
fn switching_policies_at_run_time() {
    let target = QueueTarget::new();
    let m = manual(1000, target.clone());
    memtable(m.group(), 1, 150);
    assert_eq!(
        m.poll_flushes().unwrap(),
        0,
        "default policy: 150 <= soft 250"
    );
    m.set_policy(LEGACY).unwrap();
    assert_eq!(m.poll_flushes().unwrap(), 1, "legacy policy: 150 >= 100");
    complete(target.next());
    m.set_policy(FlushPolicy::LargestAtSoftLimit).unwrap();
    memtable(m.group(), 2, 150);
    assert_eq!(m.poll_flushes().unwrap(), 0);
}

#[test]
fn held_writers_make_the_old_policy_flush_small_memtables() {
    let target = QueueTarget::new();
    let m = manual(1000, target.clone());
    m.set_policy(LEGACY).unwrap();
    for r in 1..=6 {
        memtable(m.group(), r, 90); // each under 100, total 540 > hard 500
    }
    assert!(!m.group().execution_permitted());
    assert_eq!(
        m.poll_flushes().unwrap(),
        3,
        "no livelock with many small memtables"
    );
    while let Some(f) = target.try_next() {
        complete(f);
    }
}

#[test]
fn bad_policies_are_refused_and_change_nothing() {
    let target = QueueTarget::new();
    let m = manual(1000, target);
    let err = m
        .set_policy(FlushPolicy::PerMemtableLimit {
            max_memtable_fraction: 0.0,
            max_concurrent_flushes: 2,
        })
        .unwrap_err();
    assert!(matches!(err, Error::InvalidMemtableFraction { .. }));
    assert_eq!(
        err.to_string(),
        "max-memtable fraction 0 is outside (0, 1] of the budget"
    );
    assert_eq!(m.policy(), FlushPolicy::LargestAtSoftLimit);
    assert!(matches!(
        m.set_budget(2, 0.25),
        Err(Error::BudgetTooSmall { .. })
    ));
    assert_eq!(m.limits().real_hard, 1000);
    assert!(matches!(m.poll_flushes(), Ok(0)));
}
