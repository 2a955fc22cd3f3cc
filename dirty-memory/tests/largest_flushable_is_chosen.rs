//! Under pressure the largest memtable is flushed first, then the next.

mod common;

use common::{QueueTarget, complete, id, manual, memtable};
use proptest::prelude::*;

#[test]
fn the_largest_then_the_next_largest() {
    let target = QueueTarget::new();
    let m = manual(1000, target.clone()); // soft 250
    memtable(m.group(), 1, 100);
    memtable(m.group(), 2, 300);
    memtable(m.group(), 3, 200);
    assert_eq!(m.poll_flushes().unwrap(), 1);
    let first = target.next();
    assert_eq!(first.region(), id(2));
    complete(first);
    // 300 left > 250: the next largest.
    assert_eq!(m.poll_flushes().unwrap(), 1);
    let second = target.next();
    assert_eq!(second.region(), id(3));
    complete(second);
    // 100 left: no more.
    assert_eq!(m.poll_flushes().unwrap(), 0);
    assert_eq!(m.metrics().bytes_flushed, 500);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Model: each flush picks a memtable of the largest remaining size, and
    /// flushing stops exactly when the total is back at or below the soft limit.
    #[test]
    fn flush_order_follows_size(sizes in proptest::collection::vec(1usize..300, 1..8)) {
        let target = QueueTarget::new();
        let m = manual(1000, target.clone());
        let mut model: Vec<(u64, usize)> = Vec::new();
        for (i, &s) in sizes.iter().enumerate() {
            memtable(m.group(), i as u64 + 1, s);
            model.push((i as u64 + 1, s));
        }
        loop {
            let total: usize = model.iter().map(|&(_, s)| s).sum();
            let started = m.poll_flushes().unwrap();
            if total <= 250 {
                prop_assert_eq!(started, 0);
                break;
            }
            prop_assert_eq!(started, 1);
            let flush = target.next();
            let largest = model.iter().map(|&(_, s)| s).max().unwrap();
            let picked = model.iter().position(|&(r, _)| id(r) == flush.region()).unwrap();
            prop_assert_eq!(model[picked].1, largest);
            model.remove(picked);
            complete(flush);
        }
    }
}
