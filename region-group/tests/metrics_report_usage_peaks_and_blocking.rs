//! Metrics report real and unspooled usage, their peaks, the queue length,
//! how many requests ever waited and for how long in total.
mod common;

use std::time::Duration;

use common::{id, wait_until};
use logalloc::RegionListener;
use region_group::{ReclaimConfig, RegionGroup};

#[test]
fn metrics_follow_usage_and_blocking() {
    let g = RegionGroup::new(
        "metrics",
        ReclaimConfig {
            unspooled_hard_limit: 100,
            unspooled_soft_limit: 50,
            ..Default::default()
        },
    );
    let m = g.metrics();
    assert_eq!(
        (m.real_usage, m.unspooled_usage, m.regions, m.reclaiming),
        (0, 0, 0, false)
    );

    g.add(id(1), 120);
    g.account_spooled(10).unwrap();
    let m = g.metrics();
    assert_eq!((m.real_usage, m.unspooled_usage, m.spooled), (120, 110, 10));
    assert_eq!((m.peak_real_usage, m.peak_unspooled_usage), (120, 120));
    assert!(m.reclaiming);

    let g2 = g.clone();
    let waiter = std::thread::spawn(move || g2.run_when_memory_available(|| (), None));
    wait_until("the request is queued", || g.queued_requests() == 1);
    assert_eq!(g.metrics().queued_requests, 1);
    assert_eq!(g.metrics().blocked_requests_total, 1);
    assert!(
        g.run_when_memory_available(|| (), Some(Duration::from_millis(5)))
            .is_err()
    );
    g.account_spooled(70).unwrap(); // unspooled 40: within the limit
    waiter.join().unwrap().unwrap();

    let m = g.metrics();
    assert_eq!((m.queued_requests, m.blocked_requests_total), (0, 2));
    assert!(
        m.blocked_time_total >= Duration::from_millis(5),
        "includes the timed-out wait"
    );
    assert_eq!((m.unspooled_usage, m.peak_unspooled_usage), (40, 120));
    assert!(!m.reclaiming);
}
