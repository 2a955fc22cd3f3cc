//! A grounded (sealed) memtable is never picked, however large.

mod common;

use common::{QueueTarget, complete, id, manual, memtable, threaded};
use logalloc::RegionListener;

#[test]
fn the_largest_grounded_region_is_skipped() {
    let target = QueueTarget::new();
    let m = manual(1000, target.clone());
    memtable(m.group(), 1, 400);
    memtable(m.group(), 2, 50);
    memtable(m.group(), 3, 80);
    m.group().ground_evictable(id(1));
    assert_eq!(m.poll_flushes().unwrap(), 1);
    let f = target.next();
    assert_eq!(f.region(), id(3));
    complete(f);
    // Still 450 > 250: the next flushable one, never region 1.
    assert_eq!(m.poll_flushes().unwrap(), 1);
    let f = target.next();
    assert_eq!(f.region(), id(2));
    complete(f);
    // Only the grounded region is left: nothing can be flushed.
    assert_eq!(m.poll_flushes().unwrap(), 0);
    assert_eq!(m.metrics().flushes_started, 2);
}

#[test]
fn when_everything_is_grounded_the_loop_backs_off_and_resumes() {
    let target = QueueTarget::new();
    let m = threaded(1000, target.clone());
    // Grounded before it grows, so the loop never sees it flushable.
    memtable(m.group(), 1, 0);
    m.group().ground_evictable(id(1));
    m.group().increase_usage(id(1), 400);
    // Over the soft limit, nothing flushable: the loop backs off (timed
    // waits). A new memtable is picked up without any other signal.
    memtable(m.group(), 2, 10);
    let f = target.next();
    assert_eq!(f.region(), id(2));
    complete(f);
    m.shutdown();
    assert_eq!(m.metrics().flushes_started, 1);
}
