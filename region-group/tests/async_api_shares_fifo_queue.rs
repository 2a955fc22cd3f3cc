//! Blocking and async requests wait in one FIFO queue; dropping a queued
//! future removes it, dropping an admitted one passes the turn on.
mod common;

use std::sync::{Arc, Mutex};
use std::task::Poll;

use common::{Flag, block_on, id, poll_once, wait_until};
use logalloc::RegionListener;
use region_group::{ReclaimConfig, RegionGroup};

#[test]
fn blocking_and_async_requests_share_one_fifo() {
    let g = RegionGroup::new(
        "mixed",
        ReclaimConfig {
            unspooled_hard_limit: 10,
            ..Default::default()
        },
    );
    g.add(id(1), 11);
    let order = Arc::new(Mutex::new(Vec::new()));
    let flag = Arc::new(Flag::default());
    let o = order.clone();
    let mut first =
        g.run_when_memory_available_async(move || o.lock().unwrap().push("async-1"), None);
    assert!(poll_once(&mut first, &flag).is_pending());
    let (g2, o2) = (g.clone(), order.clone());
    let blocking = std::thread::spawn(move || {
        g2.run_when_memory_available(|| o2.lock().unwrap().push("blocking-2"), None)
            .unwrap();
    });
    wait_until("the blocking request is queued", || {
        g.queued_requests() == 2
    });
    let (g3, o3) = (g.clone(), order.clone());
    let third = std::thread::spawn(move || {
        block_on(g3.run_when_memory_available_async(|| o3.lock().unwrap().push("async-3"), None))
            .unwrap();
    });
    wait_until("the third request is queued", || g.queued_requests() == 3);

    g.decrease_usage(id(1), 1);
    assert!(flag.take());
    assert_eq!(poll_once(&mut first, &flag), Poll::Ready(Ok(())));
    blocking.join().unwrap();
    third.join().unwrap();
    assert_eq!(*order.lock().unwrap(), ["async-1", "blocking-2", "async-3"]);
}

#[test]
fn dropping_futures_cancels_cleanly() {
    let g = RegionGroup::new(
        "cancel",
        ReclaimConfig {
            unspooled_hard_limit: 10,
            ..Default::default()
        },
    );
    g.add(id(1), 11);
    let flag = Arc::new(Flag::default());
    let mut a = g.run_when_memory_available_async(|| "a", None);
    let mut b = g.run_when_memory_available_async(|| "b", None);
    let mut c = g.run_when_memory_available_async(|| "c", None);
    assert!(poll_once(&mut a, &flag).is_pending());
    assert!(poll_once(&mut b, &flag).is_pending());
    assert!(poll_once(&mut c, &flag).is_pending());
    drop(b); // queued: just leaves the queue
    assert_eq!(g.queued_requests(), 2);
    g.decrease_usage(id(1), 1); // admits a
    assert_eq!(g.queued_requests(), 1);
    drop(a); // admitted but never run: c gets the turn
    assert_eq!(g.queued_requests(), 0);
    assert_eq!(poll_once(&mut c, &flag), Poll::Ready(Ok("c")));
    assert_eq!(g.run_when_memory_available(|| "d", None), Ok("d"));
}
