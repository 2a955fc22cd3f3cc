//! Shutdown fails every queued request (blocking or async) with an error
//! naming the group, and every later request too.
mod common;

use std::sync::Arc;
use std::task::Poll;

use common::{Flag, id, poll_once, wait_until};
use logalloc::RegionListener;
use region_group::{Error, ReclaimConfig, RegionGroup};

#[test]
fn shutdown_wakes_all_waiters_with_the_shutdown_error() {
    let g = RegionGroup::new(
        "system",
        ReclaimConfig {
            unspooled_hard_limit: 10,
            ..Default::default()
        },
    );
    g.add(id(1), 11);
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let g2 = g.clone();
            let t = std::thread::spawn(move || g2.run_when_memory_available(|| i, None));
            wait_until("the request is queued", || g.queued_requests() == i + 1);
            t
        })
        .collect();
    let flag = Arc::new(Flag::default());
    let mut fut = g.run_when_memory_available_async(|| 99, None);
    assert!(poll_once(&mut fut, &flag).is_pending());

    g.shutdown();
    let expected = Error::Shutdown {
        group: "system".into(),
    };
    assert_eq!(
        expected.to_string(),
        "region group `system` is shut down: request not run"
    );
    for t in threads {
        assert_eq!(t.join().unwrap(), Err(expected.clone()));
    }
    assert!(flag.take());
    assert_eq!(
        poll_once(&mut fut, &flag),
        Poll::Ready(Err(expected.clone()))
    );
    assert_eq!(g.queued_requests(), 0);

    // Later requests fail at once, even with memory available.
    g.del(id(1), 11);
    assert_eq!(
        g.run_when_memory_available(|| 1, None),
        Err(expected.clone())
    );
    assert!(g.is_shutdown());
}
