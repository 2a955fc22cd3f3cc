//! A flush's progress is accounted against its memtable's region: it never
//! outlives or outgrows the memtable, and `account_written`/`unaccount`
//! return what was actually accounted.

mod common;

use common::{QueueTarget, id, manual, memtable};
use logalloc::RegionListener;

#[test]
fn a_memtable_dropped_before_its_flush_finishes_takes_its_progress_along() {
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
    // The owner drops memtable 1 before finishing its flush. Its 300
    // spooled bytes leave with it: they do not hide memtable 2 (group-level
    // spooled bytes would have left unspooled dirty at 0 here).
    group.del(id(1), 300);
    assert_eq!((group.real_usage(), group.spooled()), (200, 0));
    assert_eq!(m.metrics().unspooled_dirty, 200);
    assert_eq!(first.spooled(), 0);

    m.request_flush(id(2)).unwrap();
    assert_eq!(m.poll_flushes().unwrap(), 1);
    let mut second = target.next();
    assert_eq!(second.region(), id(2));
    assert_eq!(second.account_written(100), 100);
    // The first flush finishes late: nothing of memtable 2 is given back.
    first.finish();
    assert_eq!((group.spooled(), second.spooled()), (100, 100));
    assert_eq!(second.unaccount(40), 40);
    assert_eq!((second.spooled(), group.spooled()), (60, 60));
    second.data_written();
    second.finish_releasing(|| group.del(id(2), 200));
    let metrics = m.metrics();
    assert_eq!(metrics.flushes_completed, 2);
    assert_eq!((metrics.real_dirty, metrics.unspooled_dirty), (0, 0));
}

#[test]
fn a_memtable_shrinking_during_its_flush_caps_its_progress() {
    let target = QueueTarget::new();
    let m = manual(1000, target.clone());
    let group = m.group();
    memtable(group, 1, 300);
    assert_eq!(m.poll_flushes().unwrap(), 1);
    let mut flush = target.next();
    assert_eq!(flush.account_written(250), 250);
    group.decrease_usage(id(1), 100); // versions merged: 200 bytes left
    assert_eq!(flush.spooled(), 200);
    assert_eq!(group.unspooled_usage(), 0);
    assert_eq!(
        flush.account_written(50),
        0,
        "the whole memtable is spooled"
    );
    assert_eq!(flush.unaccount(300), 200, "only what is left is given back");
    assert_eq!(group.unspooled_usage(), 200);
    flush.fail("injected");
    assert_eq!(group.spooled(), 0);
}

#[test]
fn refused_progress_is_not_reported_as_accounted() {
    let target = QueueTarget::new();
    let m = manual(1000, target.clone());
    let group = m.group();
    memtable(group, 1, 300);
    assert_eq!(m.poll_flushes().unwrap(), 1);
    let mut flush = target.next();
    // Someone else declares the whole group spooled: the group refuses more.
    group.account_spooled(300).unwrap();
    assert_eq!(flush.account_written(100), 0, "nothing was accounted");
    assert_eq!((flush.spooled(), group.spooled()), (0, 300));
    assert_eq!(flush.unaccount(100), 0, "nothing to give back");
    group.revert_spooled(300).unwrap();
    assert_eq!(flush.account_written(100), 100);
    flush.finish();
    assert_eq!(group.spooled(), 0);
}
