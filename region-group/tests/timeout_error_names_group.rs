//! A request that waits longer than its timeout fails with an error naming
//! the group, does not run, and leaves the queue.
mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;
use std::time::Duration;

use common::{Flag, block_on, id, poll_once};
use logalloc::RegionListener;
use region_group::{Error, ReclaimConfig, RegionGroup};

fn over_limit_group() -> Arc<RegionGroup> {
    let g = RegionGroup::new(
        "dirty-user",
        ReclaimConfig {
            unspooled_hard_limit: 10,
            ..Default::default()
        },
    );
    g.add(id(1), 11);
    g
}

#[test]
fn blocking_request_times_out() {
    let g = over_limit_group();
    let ran = AtomicBool::new(false);
    let err = g
        .run_when_memory_available(
            || ran.store(true, Ordering::SeqCst),
            Some(Duration::from_millis(20)),
        )
        .unwrap_err();
    assert_eq!(
        err,
        Error::Timeout {
            group: "dirty-user".into()
        }
    );
    assert_eq!(
        err.to_string(),
        "region group `dirty-user`: timed out waiting for memory"
    );
    assert!(!ran.load(Ordering::SeqCst));
    let m = g.metrics();
    assert_eq!((m.queued_requests, m.blocked_requests_total), (0, 1));
    assert!(m.blocked_time_total >= Duration::from_millis(20));
}

#[test]
fn timed_out_request_does_not_hold_back_the_next() {
    let g = over_limit_group();
    assert!(
        g.run_when_memory_available(|| (), Some(Duration::ZERO))
            .is_err()
    );
    g.decrease_usage(id(1), 1);
    assert_eq!(
        g.run_when_memory_available(|| 1, Some(Duration::ZERO)),
        Ok(1)
    );
}

#[test]
fn async_request_times_out() {
    let g = over_limit_group();
    let out = block_on(g.run_when_memory_available_async(|| 1, Some(Duration::from_millis(20))));
    assert_eq!(
        out,
        Err(Error::Timeout {
            group: "dirty-user".into()
        })
    );
    assert_eq!(g.queued_requests(), 0);
}

#[test]
fn async_timeouts_expire_in_deadline_order_and_spare_others() {
    let g = over_limit_group();
    let flag = Arc::new(Flag::default());
    let mut long = g.run_when_memory_available_async(|| "long", Some(Duration::from_secs(3600)));
    let mut none = g.run_when_memory_available_async(|| "none", None);
    assert!(poll_once(&mut long, &flag).is_pending());
    assert!(poll_once(&mut none, &flag).is_pending());
    // A shorter deadline registered after a longer one still fires first.
    let short =
        block_on(g.run_when_memory_available_async(|| "short", Some(Duration::from_millis(10))));
    assert_eq!(
        short,
        Err(Error::Timeout {
            group: "dirty-user".into()
        })
    );
    assert_eq!(g.queued_requests(), 2);
    g.decrease_usage(id(1), 1);
    assert_eq!(poll_once(&mut long, &flag), Poll::Ready(Ok("long")));
    assert_eq!(poll_once(&mut none, &flag), Poll::Ready(Ok("none")));
}
