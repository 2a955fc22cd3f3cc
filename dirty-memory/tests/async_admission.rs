//! `run_when_memory_available_async`: the fast path runs `f` at the first
//! poll; above the hard limit the future stays pending, is woken when a
//! flush's progress brings usage under it, and runs `f` then; a queued
//! future dropped leaves the queue with `f` never run; a timeout is the
//! manager's `Admission` error.

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use common::{PATIENCE, QueueTarget, id, memtable, threaded, wait_until};
use dirty_memory::Error;
use logalloc::RegionListener;

/// A waker that records that it was woken.
#[derive(Default)]
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn poll<F: Future + Unpin>(fut: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(fut).poll(&mut Context::from_waker(waker))
}

#[test]
fn the_fast_path_runs_f_at_the_first_poll() {
    let m = threaded(1000, QueueTarget::new());
    let mut fut = m.run_when_memory_available_async(|| 7, Some(PATIENCE));
    let got = poll(&mut fut, Waker::noop());
    assert!(matches!(got, Poll::Ready(Ok(7))), "{got:?}");
    m.shutdown();
}

#[test]
fn a_held_future_is_woken_and_runs_once_progress_admits_it() {
    let target = QueueTarget::new();
    let m = threaded(1000, target.clone()); // soft 250, hard 500
    memtable(m.group(), 1, 600);
    let mut flush = target.next();
    let wrote = AtomicBool::new(false);
    let flag = Arc::new(Flag::default());
    let waker = Waker::from(Arc::clone(&flag));
    let mut fut = m.run_when_memory_available_async(
        || {
            m.group().add(id(2), 0);
            m.group().increase_usage(id(2), 10);
            wrote.store(true, Ordering::SeqCst);
        },
        Some(PATIENCE),
    );
    assert!(poll(&mut fut, &waker).is_pending());
    assert_eq!(m.metrics().writers_waiting, 1);
    assert!(!flag.0.load(Ordering::SeqCst));
    flush.account_written(150); // unspooled 450 <= 500
    let deadline = Instant::now() + PATIENCE;
    while !flag.0.load(Ordering::SeqCst) {
        assert!(Instant::now() < deadline, "never woken");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(!wrote.load(Ordering::SeqCst), "f runs in poll, not before");
    assert!(matches!(poll(&mut fut, &waker), Poll::Ready(Ok(()))));
    assert!(wrote.load(Ordering::SeqCst));
    drop(fut);
    common::complete(flush);
    m.shutdown();
}

#[test]
fn a_dropped_queued_future_leaves_the_queue_and_never_runs_f() {
    let target = QueueTarget::new();
    let m = threaded(1000, target.clone());
    memtable(m.group(), 1, 600);
    let flush = target.next();
    let ran = AtomicBool::new(false);
    let mut fut =
        m.run_when_memory_available_async(|| ran.store(true, Ordering::SeqCst), Some(PATIENCE));
    assert!(poll(&mut fut, Waker::noop()).is_pending());
    wait_until("queued", || m.metrics().writers_waiting == 1);
    drop(fut);
    assert_eq!(m.metrics().writers_waiting, 0);
    common::complete(flush);
    assert!(!ran.load(Ordering::SeqCst));
    m.shutdown();
}

#[test]
fn a_timed_out_future_fails_with_the_managers_admission_error() {
    let target = QueueTarget::new();
    let m = threaded(1000, target.clone());
    memtable(m.group(), 1, 600);
    let flush = target.next(); // never progresses
    let flag = Arc::new(Flag::default());
    let waker = Waker::from(Arc::clone(&flag));
    let mut fut = m.run_when_memory_available_async(|| (), Some(Duration::from_millis(5)));
    assert!(poll(&mut fut, &waker).is_pending());
    let deadline = Instant::now() + PATIENCE;
    let err = loop {
        if let Poll::Ready(r) = poll(&mut fut, &waker) {
            break r.unwrap_err();
        }
        assert!(Instant::now() < deadline, "never timed out");
        std::thread::sleep(Duration::from_millis(1));
    };
    assert!(matches!(err, Error::Admission { .. }), "{err}");
    assert_eq!(err.to_string(), "test: write not admitted");
    drop(fut);
    common::complete(flush);
    m.shutdown();
}
