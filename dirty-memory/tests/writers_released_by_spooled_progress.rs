//! Writers wait above the hard limit and are let in as a running flush
//! accounts its written bytes as spooled, before the flush finishes.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::{PATIENCE, QueueTarget, id, memtable, threaded, wait_until};
use dirty_memory::Error;
use logalloc::RegionListener;

#[test]
fn a_held_writer_runs_once_progress_brings_unspooled_under_the_hard_limit() {
    let target = QueueTarget::new();
    let m = Arc::new(threaded(1000, target.clone())); // soft 250, hard 500, real 1000
    memtable(m.group(), 1, 600);
    assert!(!m.group().execution_permitted());
    let mut flush = target.next(); // the loop flushes region 1 (600 > 250)
    assert_eq!(flush.region(), id(1));

    let wrote = Arc::new(AtomicBool::new(false));
    let writer = {
        let (m, wrote) = (Arc::clone(&m), wrote.clone());
        std::thread::spawn(move || {
            m.run_when_memory_available(
                || {
                    m.group().add(id(2), 0);
                    m.group().increase_usage(id(2), 10);
                    wrote.store(true, Ordering::SeqCst);
                },
                Some(PATIENCE),
            )
        })
    };
    wait_until("the writer is queued", || m.metrics().writers_waiting == 1);
    assert!(!wrote.load(Ordering::SeqCst));

    // 50 bytes written: unspooled 550, still above 500: still held.
    assert_eq!(flush.account_written(50), 50);
    assert_eq!(m.metrics().writers_waiting, 1);
    assert!(!wrote.load(Ordering::SeqCst));

    // 100 more: unspooled 450 <= 500: the writer runs, mid-flush.
    flush.account_written(100);
    writer
        .join()
        .unwrap()
        .expect("admitted by spooled progress");
    assert!(wrote.load(Ordering::SeqCst));
    let mt = m.metrics();
    assert_eq!(mt.real_dirty, 610, "real dirty is unchanged by spooling");
    assert_eq!(mt.unspooled_dirty, 460);
    assert_eq!(mt.writers_blocked, 1);
    assert!(mt.time_blocked > Duration::ZERO);
    assert_eq!(flush.spooled(), 150);
    assert!(
        flush.holds_data_permit(),
        "released before the flush finished"
    );

    common::complete(flush);
    m.shutdown();
}

#[test]
fn a_writer_times_out_when_no_flush_makes_progress() {
    let target = QueueTarget::new();
    let m = threaded(1000, target.clone());
    memtable(m.group(), 1, 600);
    let flush = target.next(); // started, but never progresses
    let err = m
        .run_when_memory_available(|| (), Some(Duration::from_millis(5)))
        .unwrap_err();
    assert!(matches!(err, Error::Admission { .. }), "{err}");
    // The message names the manager; the group's error is its source.
    assert_eq!(err.to_string(), "test: write not admitted");
    assert_eq!(
        std::error::Error::source(&err).map(ToString::to_string),
        Some("region group `test`: timed out waiting for memory".to_owned())
    );
    common::complete(flush);
    m.shutdown();
}

#[test]
fn a_failed_flush_takes_its_spooled_bytes_back() {
    let target = QueueTarget::new();
    let m = threaded(1000, target.clone());
    memtable(m.group(), 1, 600);
    let mut flush = target.next();
    flush.account_written(400);
    assert_eq!(m.metrics().unspooled_dirty, 200);
    flush.fail("disk full");
    let mt = m.metrics();
    assert_eq!(mt.unspooled_dirty, 600);
    assert_eq!(mt.real_dirty, 600);
    // The memtable was kept, and is retried (after the 100 ms back-off).
    let retry = target.next();
    assert_eq!((retry.region(), retry.attempt()), (id(1), 2));
    common::complete(retry);
    m.shutdown();
}
