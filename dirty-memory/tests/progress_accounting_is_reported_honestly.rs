//! `Flush::account_written` and `Flush::unaccount` return what they actually
//! accounted: when the group refuses the bytes (its spooled total would
//! exceed real usage), nothing is accounted and they return 0.

mod common;

use common::{QueueTarget, id, manual, memtable};
use logalloc::RegionListener;

#[test]
fn refused_progress_is_not_reported_as_accounted() {
    let target = QueueTarget::new();
    let m = manual(1000, target.clone());
    let group = m.group();
    memtable(group, 1, 300);
    memtable(group, 2, 200);
    // 500 > the 250 soft limit: the largest memtable (1) is flushed.
    assert_eq!(m.poll_flushes().unwrap(), 1);
    let mut first = target.next();
    assert_eq!(first.region(), id(1));
    assert_eq!(first.account_written(300), 300);
    first.data_written();
    // The owner drops memtable 1 before finishing its flush: its 300 bytes
    // leave real usage while they are still accounted as spooled.
    group.del(id(1), 300);
    assert_eq!((group.real_usage(), group.spooled()), (200, 300));

    // A flush of memtable 2 now cannot account anything: the group refuses.
    m.request_flush(id(2)).unwrap();
    assert_eq!(m.poll_flushes().unwrap(), 1);
    let mut second = target.next();
    assert_eq!(second.region(), id(2));
    assert_eq!(second.account_written(100), 0, "nothing was accounted");
    assert_eq!(second.spooled(), 0);
    assert_eq!(group.spooled(), 300);
    assert_eq!(second.unaccount(100), 0, "nothing to give back");

    // Once the first flush gives its bytes back, progress is accounted.
    first.finish();
    assert_eq!(group.spooled(), 0);
    assert_eq!(second.account_written(100), 100);
    assert_eq!(second.unaccount(40), 40);
    assert_eq!((second.spooled(), group.spooled()), (60, 60));
    second.data_written();
    second.finish_releasing(|| group.del(id(2), 200));
    let metrics = m.metrics();
    assert_eq!(metrics.flushes_completed, 2);
    assert_eq!((metrics.real_dirty, metrics.unspooled_dirty), (0, 0));
}
