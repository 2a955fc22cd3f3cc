//! Explicit flush requests for one memtable coalesce into one flush with a
//! shared completion, and go before pressure flushes.

mod common;

use std::sync::{Arc, Barrier};

use common::{PATIENCE, QueueTarget, complete, id, manual, memtable, threaded};
use dirty_memory::{Error, FlushReason};

#[test]
fn queued_requests_share_one_flush() {
    let target = QueueTarget::new();
    let m = manual(1000, target.clone());
    memtable(m.group(), 1, 10); // far below the soft limit
    let a = m.request_flush(id(1)).unwrap();
    let b = m.request_flush(id(1)).unwrap();
    assert!(a.same_flush(&b));
    assert_eq!(m.poll_flushes().unwrap(), 1);
    let flush = target.next();
    assert_eq!(flush.reason(), FlushReason::Explicit);
    // A request while it runs joins it too.
    let c = m.request_flush(id(1)).unwrap();
    assert!(c.same_flush(&a));
    assert_eq!(a.try_result().map(|r| r.is_ok()), None);
    complete(flush);
    for done in [a, b, c] {
        assert!(matches!(done.try_result(), Some(Ok(()))));
    }
    let mt = m.metrics();
    assert_eq!(
        (
            mt.explicit_requests,
            mt.explicit_coalesced,
            mt.flushes_started
        ),
        (3, 2, 1)
    );
}

#[test]
fn explicit_requests_go_before_pressure_flushes() {
    let target = QueueTarget::new();
    let m = manual(1000, target.clone());
    memtable(m.group(), 1, 20);
    memtable(m.group(), 2, 400); // pressure would pick this one
    let done = m.request_flush(id(1)).unwrap();
    assert_eq!(
        m.poll_flushes().unwrap(),
        1,
        "one data-writing flush at a time"
    );
    let first = target.next();
    assert_eq!(
        (first.region(), first.reason()),
        (id(1), FlushReason::Explicit)
    );
    complete(first);
    assert!(matches!(done.wait(), Ok(())));
    assert_eq!(m.poll_flushes().unwrap(), 1);
    let second = target.next();
    assert_eq!(
        (second.region(), second.reason()),
        (id(2), FlushReason::Pressure)
    );
    complete(second);
}

#[test]
fn concurrent_requests_run_one_flush_and_all_see_its_result() {
    let target = QueueTarget::new();
    let m = Arc::new(threaded(1000, target.clone()));
    memtable(m.group(), 1, 10);
    let barrier = Arc::new(Barrier::new(4));
    let requesters: Vec<_> = (0..4)
        .map(|_| {
            let (m, barrier) = (Arc::clone(&m), Arc::clone(&barrier));
            std::thread::spawn(move || {
                barrier.wait();
                let c = m.request_flush(id(1)).unwrap();
                (c.clone(), c.wait_timeout(PATIENCE))
            })
        })
        .collect();
    // However the requests interleave with the loop, they all join the
    // flush in the queue or the running flush.
    let flush = target.next();
    let region = flush.region();
    let waited_for = m.metrics().explicit_requests;
    // Requests that had not arrived when it started joined the running flush;
    // wait for all four before finishing it.
    common::wait_until("all four requests arrived", || {
        m.metrics().explicit_requests == 4
    });
    complete(flush);
    let results: Vec<_> = requesters.into_iter().map(|r| r.join().unwrap()).collect();
    for (c, r) in &results {
        assert_eq!(c.region(), region);
        assert!(c.same_flush(&results[0].0));
        assert!(matches!(r, Some(Ok(()))), "{r:?}");
    }
    assert!(waited_for >= 1);
    m.shutdown();
    assert_eq!(m.metrics().flushes_started, 1);
    assert_eq!(m.metrics().explicit_coalesced, 3);
}

#[test]
fn bad_requests_are_refused() {
    let target = QueueTarget::new();
    let m = manual(1000, target.clone());
    let err = m.request_flush(id(99)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "test: region#99 is not in the dirty-memory group"
    );

    memtable(m.group(), 1, 10);
    let pending = m.request_flush(id(1)).unwrap();
    m.shutdown();
    assert!(matches!(pending.wait(), Err(Error::ShutDown { .. })));
    assert!(matches!(
        m.request_flush(id(1)),
        Err(Error::ShutDown { .. })
    ));
    assert_eq!(target.queued(), 0);
}
