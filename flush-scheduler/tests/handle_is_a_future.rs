//! A flush handle is a runtime-agnostic future: it registers the waker it is
//! polled with and wakes it on completion.

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use common::{SimJob, Watched, gate, log, open};
use flush_scheduler::{FlushScheduler, SchedulerConfig};

struct CountingWaker(Arc<Watched<u32>>);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.update(|n| *n += 1);
    }
}

#[test]
fn pending_until_done_then_woken_and_ready() {
    let dir = tempfile::tempdir().unwrap();
    let scheduler = FlushScheduler::new(SchedulerConfig::new([dir.path()])).unwrap();
    let log = log();
    let g = gate();
    let mut handle = scheduler
        .submit(Box::new(SimJob::new(9, &log).gated(&g)))
        .unwrap();
    let waiter = handle.clone();

    let wakes = Watched::new(0u32);
    let waker = Waker::from(Arc::new(CountingWaker(Arc::clone(&wakes))));
    let mut cx = Context::from_waker(&waker);
    assert!(Pin::new(&mut handle).poll(&mut cx).is_pending());
    assert!(
        Pin::new(&mut handle).poll(&mut cx).is_pending(),
        "polling twice is fine"
    );

    assert!(
        waiter.wait_timeout(Duration::from_millis(1)).is_none(),
        "a gated flush cannot have resolved"
    );

    open(&g);
    wakes.wait_for(|n| *n >= 1);
    assert_eq!(
        wakes.get(|n| *n),
        1,
        "the same waker registered once is woken once"
    );
    let Poll::Ready(result) = Pin::new(&mut handle).poll(&mut cx) else {
        panic!("woken handle must be ready");
    };
    let report = result.unwrap();
    assert_eq!(
        Some(report),
        waiter.wait_timeout(common::PATIENCE).map(Result::unwrap)
    );
    scheduler.shutdown();
}
