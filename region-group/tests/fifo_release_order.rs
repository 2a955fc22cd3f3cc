//! Blocked requests are released in the order they queued, one at a time.
mod common;

use std::sync::{Arc, Mutex};

use common::{id, wait_until};
use logalloc::RegionListener;
use region_group::{ReclaimConfig, RegionGroup};

#[test]
fn blocked_threads_are_released_in_fifo_order() {
    let g = RegionGroup::new(
        "fifo",
        ReclaimConfig {
            unspooled_hard_limit: 100,
            ..Default::default()
        },
    );
    g.add(id(1), 101);
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut threads = Vec::new();
    for i in 0..16 {
        let (g2, order) = (g.clone(), order.clone());
        threads.push(std::thread::spawn(move || {
            g2.run_when_memory_available(|| order.lock().unwrap().push(i), None)
                .unwrap();
        }));
        wait_until("the request is queued", || g.queued_requests() == i + 1);
    }
    assert!(order.lock().unwrap().is_empty());
    g.decrease_usage(id(1), 1);
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(*order.lock().unwrap(), (0..16).collect::<Vec<_>>());
    let m = g.metrics();
    assert_eq!((m.queued_requests, m.blocked_requests_total), (0, 16));
}
