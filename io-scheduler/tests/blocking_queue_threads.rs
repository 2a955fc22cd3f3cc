//! The blocking queue with threads on a manual clock: a thread waits in
//! `submit` until its request may go; the rate's wait is on the clock,
//! a completion lets the next request go, and closing fails the waiters.

use std::sync::Arc;
use std::sync::mpsc;
use std::thread;

use device::{Clock, ManualClock};
use io_scheduler::{Capacity, Error, IoQueue, Kind, QueueConfig};

fn queue(clock: &Arc<ManualClock>, rate_limited: bool) -> Arc<IoQueue> {
    // 1 MiB/s: a 1 KiB write costs about 1 ms; bound 2 ms.
    let mut config = QueueConfig::new(Capacity::bandwidth(1 << 20));
    config.rate_limited = rate_limited;
    let clock: Arc<dyn Clock> = clock.clone();
    Arc::new(IoQueue::new("disk", config, clock).unwrap())
}

#[test]
fn a_request_beyond_the_rate_waits_for_the_clock() {
    let clock = Arc::new(ManualClock::new());
    let q = queue(&clock, true);
    let c = q.add_class("flush", 100).unwrap();
    // The bucket holds 2 ms: two 1 KiB writes go at once...
    for _ in 0..2 {
        drop(q.submit(c, Kind::Write, 1 << 10).unwrap());
    }
    // ...the third waits for the rate: on the clock, not on a sleep.
    let (tx, rx) = mpsc::channel();
    let waiter = {
        let q = Arc::clone(&q);
        thread::spawn(move || {
            let p = q.submit(c, Kind::Write, 1 << 10).unwrap();
            tx.send(p.queued()).unwrap();
        })
    };
    clock.wait_for_waiters(1);
    assert!(rx.try_recv().is_err(), "went before the time");
    let deadline = clock.next_deadline().unwrap();
    clock.advance(deadline);
    let queued = rx.recv().unwrap();
    waiter.join().unwrap();
    assert_eq!(queued, deadline, "it waited exactly for the rate");
    let stats = q.stats();
    assert_eq!(stats.classes[0].ops, 3);
    assert_eq!(stats.classes[0].queued_max, deadline);
}

#[test]
fn a_completion_lets_the_next_request_go_in_fair_order() {
    let clock = Arc::new(ManualClock::new());
    let q = queue(&clock, false);
    let bulk = q.add_class("compaction", 1).unwrap();
    let urgent = q.add_class("commitlog", 1000).unwrap();
    // A 4 KiB bulk write is in flight (4 ms: past the 2 ms bound alone).
    let first = q.submit(bulk, Kind::Write, 4 << 10).unwrap();
    let (tx, rx) = mpsc::channel();
    let mut threads = Vec::new();
    for (class, name) in [(bulk, "bulk"), (urgent, "urgent")] {
        let queue = Arc::clone(&q);
        let tx = tx.clone();
        threads.push(thread::spawn(move || {
            // 1.5 ms each: one at a time under the 2 ms bound.
            let p = queue.submit(class, Kind::Write, 1536).unwrap();
            tx.send(name).unwrap();
            drop(p);
        }));
        // The bulk waiter is queued before the urgent one arrives.
        while q
            .stats()
            .classes
            .iter()
            .map(|c| c.queued_now)
            .sum::<usize>()
            < threads.len()
        {
            thread::yield_now();
        }
    }
    assert!(rx.try_recv().is_err(), "nothing goes past the bound");
    drop(first);
    // The urgent request goes first, though it came second.
    assert_eq!(rx.recv().unwrap(), "urgent");
    assert_eq!(rx.recv().unwrap(), "bulk");
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(q.stats().in_flight, 0);
}

#[test]
fn closing_fails_the_waiters_and_later_submits() {
    let clock = Arc::new(ManualClock::new());
    let q = queue(&clock, false);
    let c = q.add_class("read", 10).unwrap();
    let held = q.submit(c, Kind::Read, 4 << 10).unwrap();
    let waiter = {
        let q = Arc::clone(&q);
        thread::spawn(move || q.submit(c, Kind::Read, 4 << 10).map(|_| ()))
    };
    while q.stats().classes[0].queued_now == 0 {
        thread::yield_now();
    }
    q.close();
    let closed = Error::Closed {
        device: "disk".into(),
    };
    assert_eq!(waiter.join().unwrap(), Err(closed.clone()));
    assert_eq!(q.submit(c, Kind::Read, 1).map(|_| ()).unwrap_err(), closed);
    assert_eq!(
        q.stats().classes[0].queued_now,
        0,
        "the waiter's request left"
    );
    drop(held);
    assert_eq!(q.stats().in_flight, 0);
    assert_eq!(
        closed.to_string(),
        "the I/O queue of device \"disk\" is closed"
    );
}
