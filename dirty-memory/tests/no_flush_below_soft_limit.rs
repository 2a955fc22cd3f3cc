//! No memtable is flushed while unspooled usage is at or below the soft limit.

mod common;

use common::{QueueTarget, complete, manual, memtable, threaded};
use proptest::prelude::*;

#[test]
fn at_the_soft_limit_nothing_is_flushed_one_byte_more_flushes() {
    let target = QueueTarget::new();
    let m = manual(1000, target.clone()); // soft 250
    assert_eq!(m.limits().unspooled_soft, 250);
    memtable(m.group(), 1, 100);
    memtable(m.group(), 2, 150);
    assert_eq!(m.poll_flushes().unwrap(), 0);
    assert_eq!(m.metrics().flushes_started, 0);
    assert_eq!(target.queued(), 0);

    memtable(m.group(), 3, 1);
    assert_eq!(m.poll_flushes().unwrap(), 1);
    complete(target.next());
}

#[test]
fn the_flush_thread_wakes_on_the_soft_limit_crossing() {
    let target = QueueTarget::new();
    let m = threaded(1000, target.clone());
    memtable(m.group(), 1, 200);
    memtable(m.group(), 2, 60); // 260 > 250: start_reclaiming wakes the loop
    let flush = target.next();
    assert_eq!(flush.region(), common::id(1));
    complete(flush);
    m.shutdown();
    assert_eq!(m.metrics().flushes_completed, 1);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Model: a flush starts iff the total exceeds the soft limit.
    #[test]
    fn flushes_start_iff_total_exceeds_soft(sizes in proptest::collection::vec(1usize..200, 1..8)) {
        let target = QueueTarget::new();
        let m = manual(1000, target.clone());
        for (i, &s) in sizes.iter().enumerate() {
            memtable(m.group(), i as u64 + 1, s);
        }
        let total: usize = sizes.iter().sum();
        let started = m.poll_flushes().unwrap();
        prop_assert_eq!(started, usize::from(total > 250));
        while let Some(f) = target.try_next() {
            complete(f);
        }
    }
}
