//! `add_async`'s future outside the loom models: the lagging-sync bound
//! of periodic mode, and a failure while batch futures wait.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Instant;

use crate::sync::plain::{AtomicBool, Ordering as O};

use super::cycle::roomy_periodic;
use super::*;

#[derive(Default)]
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: PlainArc<Self>) {
        self.0.store(true, O::SeqCst);
    }
}

fn poll(fut: &mut Durable, waker: &Waker) -> Poll<Result<ReplayPosition, Error>> {
    Pin::new(fut).poll(&mut Context::from_waker(waker))
}

fn wait_woken(flag: &Flag) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !flag.0.load(O::SeqCst) {
        assert!(Instant::now() < deadline, "never woken");
        std::thread::yield_now();
    }
}

#[test]
fn a_periodic_future_is_held_while_the_sync_lags_and_woken_by_the_sync() {
    let (log, storage) = mem_log(roomy_periodic(Duration::from_millis(1), 64 << 20));
    // The disk stops: nothing is synced, so the oldest entry ages.
    storage.0.lock().stall = true;
    let flag = PlainArc::new(Flag::default());
    let waker = Waker::from(PlainArc::clone(&flag));
    let mut ready = 0u64;
    let held = loop {
        let mut fut = log.add_async(1, &mutation("k", 10)).unwrap();
        match poll(&mut fut, &waker) {
            Poll::Ready(r) => {
                assert_eq!(r.unwrap(), fut.position());
                ready += 1;
            }
            Poll::Pending => break fut,
        }
    };
    assert!(ready >= 1, "appends are ready at once until the sync lags");
    assert_eq!(log.stats().sync_lag_waits, 1);
    assert!(!flag.0.load(O::SeqCst));
    release_the_held_future(&log, &storage, held, &flag, &waker);
}

/// With `PeriodicAck::Written` a future resolves once its entry is written,
/// and is held for the sync, as a blocking writer is, when the sync lags.
#[test]
fn a_written_periodic_future_resolves_once_written_and_is_held_while_the_sync_lags() {
    let mut config = roomy_periodic(Duration::from_millis(1), 64 << 20);
    config.periodic_ack = crate::PeriodicAck::Written;
    let (log, storage) = mem_log(config);
    // Syncs stop (writes go on): the oldest unsynced entry ages.
    storage.0.lock().stall_syncs = true;
    let mut written = 0u64;
    let (held, flag, waker) = loop {
        let flag = PlainArc::new(Flag::default());
        let waker = Waker::from(PlainArc::clone(&flag));
        let mut fut = log.add_async(1, &mutation("k", 10)).unwrap();
        if log.stats().sync_lag_waits == 1 {
            assert!(poll(&mut fut, &waker).is_pending(), "held for the sync");
            break (fut, flag, waker);
        }
        // Not lagging yet: it resolves once its entry is written.
        if poll(&mut fut, &waker).is_pending() {
            wait_woken(&flag);
        }
        match poll(&mut fut, &waker) {
            Poll::Ready(r) => assert_eq!(r.unwrap(), fut.position()),
            Poll::Pending => panic!("woken before its write"),
        }
        written += 1;
    };
    assert!(
        written >= 1,
        "futures resolve once written until the sync lags"
    );
    assert!(!flag.0.load(O::SeqCst));
    release_the_held_future(&log, &storage, held, &flag, &waker);
}

/// Lets the stalled store go on and checks that `held`, a future held for
/// a lagging sync, is woken only by that sync and resolves durable, with
/// no waker left behind.
fn release_the_held_future(
    log: &CommitLog,
    storage: &MemStorage,
    mut held: Durable,
    flag: &Flag,
    waker: &Waker,
) {
    storage.unstall();
    wait_woken(flag);
    let pos = match poll(&mut held, waker) {
        Poll::Ready(r) => r.unwrap(),
        Poll::Pending => panic!("woken before its sync"),
    };
    let s = storage.0.lock();
    let at = pos.offset as usize;
    let h = format::parse_entry_header(&s.durable[&pos.segment][at..at + format::ENTRY_HEADER_LEN]);
    assert!(
        h.is_some_and(|h| h.segment == pos.segment),
        "durable once resolved"
    );
    drop(s);
    assert!(log.shared.state.lock().lag_wakers.map.is_empty());
}

#[test]
fn waiting_batch_futures_fail_with_the_log_and_again_when_polled_again() {
    let (log, storage) = mem_log(small(SyncMode::Batch(Duration::ZERO)));
    storage.0.lock().stall = true;
    let flag = PlainArc::new(Flag::default());
    let waker = Waker::from(PlainArc::clone(&flag));
    let mut fut = log.add_async(1, &mutation("k", 10)).unwrap();
    // Either the flusher has not finished the (stalled) write, or it failed
    // already: both end in the failure below.
    let first = poll(&mut fut, &waker);
    storage.0.lock().fail_writes = true;
    storage.unstall();
    if first.is_pending() {
        wait_woken(&flag);
    }
    for _ in 0..2 {
        let got = poll(&mut fut, &waker);
        assert!(matches!(got, Poll::Ready(Err(Error::Failed(_)))), "{got:?}");
    }
    assert!(matches!(
        log.add_async(1, &mutation("k", 10)),
        Err(Error::Failed(_))
    ));
}
