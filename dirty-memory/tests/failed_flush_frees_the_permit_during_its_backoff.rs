//! A failed (or abandoned: its handle dropped) flush gives the data-write
//! permit back for its retry back-off: another memtable flushes meanwhile,
//! and the retry takes the permit again, so there is still never more than
//! one data-writing flush. This is why a target running flushes on a job
//! scheduler should let the manager, not the scheduler, retry them.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{QueueTarget, complete, id, memtable};
use dirty_memory::{DirtyMemoryConfig, DirtyMemoryManager, FlushReason, LoopMode};

#[test]
fn another_memtable_flushes_while_a_failed_one_backs_off() {
    let target = QueueTarget::new();
    let mut config = DirtyMemoryConfig::new("backoff", 1000);
    config.loop_mode = LoopMode::Manual;
    config.retry_backoff_min = Duration::MAX; // retried only when asked
    config.retry_backoff_max = Duration::MAX;
    let m = DirtyMemoryManager::new(config, Arc::clone(&target) as _).unwrap();
    memtable(m.group(), 1, 200);
    memtable(m.group(), 2, 150);
    assert_eq!(m.poll_flushes().unwrap(), 1);
    let mut first = target.next();
    assert_eq!(first.region(), id(1));
    first.account_written(120);
    assert_eq!(m.group().unspooled_usage(), 230);
    drop(first); // e.g. a job dropped by its scheduler: the flush failed
    let metrics = m.metrics();
    assert_eq!((metrics.flushes_failed, metrics.retries_pending), (1, 1));
    assert_eq!(
        m.group().unspooled_usage(),
        350,
        "its progress was reverted"
    );
    assert!(metrics.writing.is_empty(), "the permit is free");

    // Memtable 1 is sealed and backing off: memtable 2 flushes meanwhile.
    assert_eq!(m.poll_flushes().unwrap(), 1);
    let second = target.next();
    assert_eq!(second.region(), id(2));
    let retry = m.request_flush(id(1)).unwrap();
    assert_eq!(
        m.poll_flushes().unwrap(),
        0,
        "the retry waits for the permit"
    );
    complete(second);
    assert_eq!(m.poll_flushes().unwrap(), 1);
    let again = target.next();
    assert_eq!(
        (again.region(), again.reason()),
        (id(1), FlushReason::Retry)
    );
    complete(again);
    assert!(matches!(retry.wait(), Ok(())));
    assert_eq!(m.metrics().max_concurrent_data_writers, 1);
}
