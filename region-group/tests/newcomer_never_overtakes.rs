//! A newcomer never overtakes a queued request: while a request is queued,
//! or admitted and not yet finished, new requests queue behind it even if
//! memory is within the limits.
mod common;

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use common::{Flag, id, poll_once, wait_until};
use logalloc::RegionListener;
use region_group::{Error, ReclaimConfig, RegionGroup};

#[test]
fn newcomer_queues_behind_a_running_released_request() {
    let g = RegionGroup::new(
        "overtake",
        ReclaimConfig {
            unspooled_hard_limit: 100,
            ..Default::default()
        },
    );
    g.add(id(1), 101);
    let order = Arc::new(Mutex::new(Vec::new()));
    let (running_tx, running_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let (g1, o1) = (g.clone(), order.clone());
    let first = std::thread::spawn(move || {
        g1.run_when_memory_available(
            || {
                running_tx.send(()).unwrap();
                go_rx.recv().unwrap();
                o1.lock().unwrap().push("first");
            },
            None,
        )
        .unwrap();
    });
    wait_until("the first request is queued", || g.queued_requests() == 1);
    g.decrease_usage(id(1), 1); // within the limit: the first is admitted
    running_rx.recv().unwrap();
    assert!(g.execution_permitted());
    let (g2, o2) = (g.clone(), order.clone());
    let newcomer = std::thread::spawn(move || {
        g2.run_when_memory_available(|| o2.lock().unwrap().push("newcomer"), None)
            .unwrap();
    });
    wait_until("the newcomer is queued", || g.queued_requests() == 1);
    go_tx.send(()).unwrap();
    first.join().unwrap();
    newcomer.join().unwrap();
    assert_eq!(*order.lock().unwrap(), ["first", "newcomer"]);
}

#[test]
fn newcomer_cannot_pass_an_admitted_future_that_has_not_run_yet() {
    let g = RegionGroup::new(
        "overtake",
        ReclaimConfig {
            unspooled_hard_limit: 100,
            ..Default::default()
        },
    );
    g.add(id(1), 101);
    let flag = Arc::new(Flag::default());
    let mut queued = g.run_when_memory_available_async(|| "queued", None);
    assert!(poll_once(&mut queued, &flag).is_pending());
    g.decrease_usage(id(1), 1);
    assert!(flag.take(), "admission wakes the future");
    // Admitted but not polled yet: the newcomer must not run first.
    assert_eq!(
        g.run_when_memory_available(|| "newcomer", Some(Duration::ZERO)),
        Err(Error::Timeout {
            group: "overtake".into()
        })
    );
    assert_eq!(poll_once(&mut queued, &flag), Poll::Ready(Ok("queued")));
    assert_eq!(
        g.run_when_memory_available(|| "newcomer", Some(Duration::ZERO)),
        Ok("newcomer")
    );
}
