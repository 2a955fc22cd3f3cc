//! A `finish_releasing` whose release closure panics still ends the flush:
//! the loop goes on starting flushes and shutdown does not wait for it
//! forever.

mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};

use common::{QueueTarget, id, manual, memtable};

#[test]
fn a_panicking_release_does_not_stall_the_flush_loop() {
    let target = QueueTarget::new();
    let m = manual(1000, target.clone());
    memtable(m.group(), 1, 300);
    assert_eq!(m.poll_flushes().unwrap(), 1);
    let mut flush = target.next();
    assert_eq!(flush.account_written(300), 300);
    flush.data_written();
    let panicked = catch_unwind(AssertUnwindSafe(|| {
        flush.finish_releasing(|| panic!("the owner failed to drop the memtable"));
    }));
    assert!(panicked.is_err());
    let metrics = m.metrics();
    assert_eq!(metrics.flushes_in_flight, 0, "the flush ended");
    assert_eq!(metrics.flushes_completed, 1);
    assert_eq!(m.group().spooled(), 0);

    // The loop still starts flushes.
    memtable(m.group(), 2, 300);
    assert_eq!(m.poll_flushes().unwrap(), 1);
    let next = target.next();
    assert_eq!(next.region(), id(2));
    next.finish();
    m.shutdown();
}
