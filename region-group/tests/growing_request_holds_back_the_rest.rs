//! Queued requests are admitted one per memory check: a released request
//! that grows memory past the limit holds back every request behind it
//! until memory is freed again; raising the limit also releases them.
mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{id, wait_until};
use logalloc::RegionListener;
use region_group::{Error, ReclaimConfig, RegionGroup};

#[test]
fn growth_by_a_released_request_blocks_the_next() {
    let g = RegionGroup::new(
        "grow",
        ReclaimConfig {
            unspooled_hard_limit: 100,
            ..Default::default()
        },
    );
    let (hog, writes) = (id(1), id(2));
    g.add(hog, 101);
    g.add(writes, 0);
    let order = Arc::new(Mutex::new(Vec::new()));
    let threads: Vec<_> = (0..3)
        .map(|i| {
            let (g2, order) = (g.clone(), order.clone());
            let t = std::thread::spawn(move || {
                g2.run_when_memory_available(
                    || {
                        // Each request leaves 60 bytes allocated.
                        g2.increase_usage(writes, 60);
                        order.lock().unwrap().push(i);
                    },
                    None,
                )
            });
            wait_until("the request is queued", || g.queued_requests() == i + 1);
            t
        })
        .collect();

    // Usage 0: the first runs (usage 60, within), so the second is admitted
    // and runs (usage 120, over): the third must stay queued.
    g.decrease_usage(hog, 101);
    wait_until("two requests ran", || order.lock().unwrap().len() >= 2);
    assert_eq!(g.real_usage(), 120);
    assert_eq!(g.queued_requests(), 1);
    assert_eq!(*order.lock().unwrap(), [0, 1]);
    assert_eq!(
        g.run_when_memory_available(|| (), Some(Duration::ZERO)),
        Err(Error::Timeout {
            group: "grow".into()
        }),
        "a newcomer waits too"
    );
    g.decrease_usage(writes, 60); // back to 60: the third runs
    for t in threads {
        t.join().unwrap().unwrap();
    }
    assert_eq!(*order.lock().unwrap(), [0, 1, 2]);
    assert_eq!(g.real_usage(), 120);
}

#[test]
fn a_request_that_overshoots_holds_back_the_queue_until_memory_is_freed() {
    let g = RegionGroup::new(
        "grow",
        ReclaimConfig {
            unspooled_hard_limit: 100,
            ..Default::default()
        },
    );
    let (hog, writes) = (id(1), id(2));
    g.add(hog, 101);
    g.add(writes, 0);
    let order = Arc::new(Mutex::new(Vec::new()));
    let spawn = |i: usize, grow: usize| {
        let (g2, order) = (g.clone(), order.clone());
        let t = std::thread::spawn(move || {
            g2.run_when_memory_available(
                || {
                    g2.increase_usage(writes, grow);
                    order.lock().unwrap().push(i);
                },
                None,
            )
        });
        wait_until("the request is queued", || g.queued_requests() == i + 1);
        t
    };
    let first = spawn(0, 200); // overshoots the limit
    let second = spawn(1, 0);
    g.decrease_usage(hog, 101);
    first.join().unwrap().unwrap();
    // The first left usage at 200: the second stays queued.
    assert_eq!(g.queued_requests(), 1);
    assert_eq!(*order.lock().unwrap(), [0]);
    g.update_limits(200, 200, usize::MAX); // raising the limit releases it
    second.join().unwrap().unwrap();
    assert_eq!(*order.lock().unwrap(), [0, 1]);
}
