//! Helpers shared by the integration tests.
#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use logalloc::RegionId;

pub(crate) fn id(n: u64) -> RegionId {
    RegionId::from_raw(n)
}

/// Waits (yielding, bounded by 30 s) until `cond` holds; panics if it never
/// does. Used to know that a spawned thread has queued its request.
pub(crate) fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(Instant::now() < deadline, "gave up waiting until {what}");
        std::thread::yield_now();
    }
}

/// A waker that records that it was woken.
#[derive(Default)]
pub(crate) struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl Flag {
    pub(crate) fn take(&self) -> bool {
        self.0.swap(false, Ordering::SeqCst)
    }
}

/// Polls `fut` once with a waker that sets the returned flag.
pub(crate) fn poll_once<F: Future + Unpin>(fut: &mut F, flag: &Arc<Flag>) -> Poll<F::Output> {
    let waker = Waker::from(flag.clone());
    Pin::new(fut).poll(&mut Context::from_waker(&waker))
}

/// Wakes a parked thread.
struct Unparker(std::thread::Thread);

impl Wake for Unparker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// A minimal executor: polls `fut` on this thread, parking between polls.
pub(crate) fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let waker = Waker::from(Arc::new(Unparker(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}
