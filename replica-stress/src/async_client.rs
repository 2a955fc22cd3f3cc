//! `--async N`: a client thread that keeps `N` writes in flight through
//! [`Target::apply_async`], on a small executor of its own.
//!
//! Each write is a boxed future with its own waker, which marks the future
//! and unparks the thread. The thread polls every marked future, records
//! the ones that finished (latency from issue to completion), issues new
//! operations up to `N` in flight, and parks when nothing is marked: a
//! wake-up that comes between the scan and the park leaves the thread's
//! park token, so it is not lost. Reads, which have no async form, run
//! inline between polls.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::Instant;

use crate::error::Error;
use crate::latency::Outcome;
use crate::runner::{ClientArgs, Leaving, nanos};
use crate::sync::{Arc, AtomicBool, Ordering};
use crate::target::Target;
use crate::workload::{Op, OpGenerator};

/// Marks its future ready to be polled and unparks the client thread.
struct Mark {
    woken: AtomicBool,
    thread: Thread,
}

impl Wake for Mark {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.thread.unpark();
    }
}

type WriteFuture<'a, E> = Pin<Box<dyn Future<Output = Result<(), E>> + 'a>>;

/// One write in flight.
struct InFlight<'a, E> {
    fut: WriteFuture<'a, E>,
    mark: Arc<Mark>,
    waker: Waker,
    began: Instant,
}

/// Records one finished operation, as the blocking client does.
fn finish<E: std::error::Error>(
    c: &ClientArgs<'_>,
    write: bool,
    result: Result<u64, E>,
    began: Instant,
) {
    let shared = c.shared;
    let done = Instant::now();
    let (ok, rows) = match result {
        Ok(rows) => (true, rows),
        Err(e) => {
            let mut first = shared.first_error.lock();
            if first.is_none() {
                *first = Some(crate::runner::error_chain(&e));
            }
            (false, 0)
        }
    };
    shared.recorder.record(
        c.thread,
        Outcome {
            write,
            ok,
            rows,
            latency: done - began,
        },
    );
    let at = nanos(done - shared.start);
    let previous = shared.last_done.fetch_max(at, Ordering::Relaxed);
    if at > previous {
        shared
            .longest_pause
            .fetch_max(at - previous, Ordering::Relaxed);
    }
}

/// The client thread of an `--async` run: issues operations until the run
/// stops, with up to `in_flight` writes pending, then waits for the ones
/// in flight.
pub(crate) fn run<T: Target>(
    target: &T,
    c: &ClientArgs<'_>,
    mut generator: OpGenerator,
    in_flight: usize,
) -> Result<(), Error> {
    let shared = c.shared;
    let _leaving = Leaving(shared);
    let thread = std::thread::current();
    let mut slots: Vec<InFlight<'_, T::Error>> = Vec::with_capacity(in_flight);
    let mut exhausted = false;
    loop {
        while !exhausted && slots.len() < in_flight {
            if shared.stop.load(Ordering::Relaxed)
                || shared.issued.fetch_add(1, Ordering::Relaxed) >= shared.limit
            {
                exhausted = true;
                break;
            }
            let op = match generator.next_op() {
                Ok(op) => op,
                Err(e) => {
                    shared.stop.store(true, Ordering::Relaxed);
                    // The writes in flight are dropped (cancelled).
                    return Err(e);
                }
            };
            let began = Instant::now();
            match op {
                Op::Write { table, mutation } => {
                    let mark = Arc::new(Mark {
                        // Polled once at once: the first poll appends.
                        woken: AtomicBool::new(true),
                        thread: thread.clone(),
                    });
                    slots.push(InFlight {
                        fut: target.apply_async(&c.names[table as usize], mutation),
                        waker: Waker::from(Arc::clone(&mark)),
                        mark,
                        began,
                    });
                }
                Op::Read { table, key } => {
                    let result = target.read(&c.names[table as usize], &key);
                    finish(c, false, result, began);
                }
            }
        }
        if slots.is_empty() {
            if exhausted {
                return Ok(());
            }
            continue;
        }
        let mut progressed = false;
        let mut i = 0;
        while i < slots.len() {
            let s = &mut slots[i];
            if !s.mark.woken.swap(false, Ordering::Acquire) {
                i += 1;
                continue;
            }
            match s.fut.as_mut().poll(&mut Context::from_waker(&s.waker)) {
                Poll::Ready(result) => {
                    progressed = true;
                    let s = slots.swap_remove(i);
                    finish(c, true, result.map(|()| c.rows_per_write), s.began);
                }
                Poll::Pending => i += 1,
            }
        }
        if !progressed && (exhausted || slots.len() == in_flight) {
            // Every future waits: a wake-up unparks the thread (one that
            // came since the scan left the park token).
            std::thread::park();
        }
    }
}
