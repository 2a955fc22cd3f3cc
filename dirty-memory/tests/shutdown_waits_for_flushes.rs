//! Shutdown stops new flushes, waits for the ones in flight (tails
//! included), and fails what was still queued.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use common::{QueueTarget, complete, id, memtable, threaded, wait_until};
use dirty_memory::Error;

#[test]
fn shutdown_returns_only_after_the_flush_in_its_tail_finished() {
    let target = QueueTarget::new();
    let m = Arc::new(threaded(1000, target.clone()));
    memtable(m.group(), 1, 300);
    let mut flush = target.next();
    flush.account_written(usize::MAX);
    flush.data_written(); // in its tail: the permit is free, the slot is not
    memtable(m.group(), 2, 10);
    let queued = m.request_flush(id(2)).unwrap();

    let returned = Arc::new(AtomicBool::new(false));
    let stopper = {
        let (m, returned) = (Arc::clone(&m), returned.clone());
        std::thread::spawn(move || {
            m.shutdown();
            returned.store(true, Ordering::SeqCst);
        })
    };
    // The explicit request for region 2 either started before shutdown (and
    // is in the target's queue) or fails with ShutDown; either way shutdown
    // waits for region 1's tail.
    wait_until("shutdown was requested", || {
        m.request_flush(id(2))
            .is_err_and(|e| matches!(e, Error::ShutDown { .. }))
    });
    assert!(
        !returned.load(Ordering::SeqCst),
        "shutdown returned with a flush in flight"
    );
    complete(flush);
    // Flushes are counted when they start, under the lock that shutdown
    // sets its flag under: a second start, if any, is on its way to us.
    if m.metrics().flushes_started == 2 {
        complete(target.next());
        assert!(matches!(queued.wait(), Ok(())));
    } else {
        assert!(matches!(queued.wait(), Err(Error::ShutDown { .. })));
    }
    stopper.join().unwrap();
    assert!(returned.load(Ordering::SeqCst));
    assert_eq!(m.metrics().flushes_in_flight, 0);
}
