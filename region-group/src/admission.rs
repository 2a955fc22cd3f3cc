//! Writer throttling: run a request now if memory allows and nobody is
//! queued, otherwise queue it FIFO until the group admits it.
//!
//! Admission is sequential: the group admits the head of the queue only when
//! usage is within every hard limit *and* no previously admitted request is
//! still running ([`State::releasing`](crate::group::State)). The admitted
//! request runs on its own thread (blocking API) or in its own task (async
//! API); when it returns, the group checks memory again before admitting the
//! next. So a request that grows memory holds back the rest, and releasing
//! never runs requests inside a listener callback (which may hold a region
//! lock).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::error::Error;
use crate::group::{RegionGroup, Shared, State};
use crate::sync::{Arc, Condvar};
use crate::timer;
use crate::waiter::{Notify, Status, Waiter};

/// An admitted request's turn: ends (letting the group admit the next
/// request) when dropped, even if the request panics.
struct Turn<'a>(&'a Shared);

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut st = self.0.lock();
        st.releasing = false;
        self.0.settle(st);
    }
}

impl State {
    /// Queues a new waiter at the back; returns its slab key and sequence.
    fn enqueue(&mut self, notify: Notify) -> (usize, u64) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let key = self.waiters.insert(Waiter {
            seq,
            status: Status::Queued,
            notify,
            queued_at: Instant::now(),
        });
        self.queue.push_back(key);
        self.blocked_total += 1;
        (key, seq)
    }
}

impl<O: ?Sized + Send + Sync + 'static> RegionGroup<O> {
    /// Runs `f` once memory is available, blocking the calling thread until
    /// then, and returns its result.
    ///
    /// `f` runs at once (on this thread) if no request is queued or being
    /// released and usage is within every hard limit (equal to a limit is
    /// within). Otherwise the request joins the back of the FIFO queue: a
    /// newcomer never overtakes a queued request. Queued requests are
    /// admitted one at a time, each after the previous one returned and
    /// memory was checked again; an admitted `f` runs on the thread that
    /// called this. `f` must not call `run_when_memory_available` on the same
    /// group (it would wait for itself).
    ///
    /// # Errors
    ///
    /// * [`Error::Timeout`] if `timeout` (measured from the call) passes
    ///   before the request is admitted; `f` is not run.
    /// * [`Error::Shutdown`] if the group is or gets shut down before the
    ///   request is admitted; `f` is not run.
    pub fn run_when_memory_available<T>(
        &self,
        f: impl FnOnce() -> T,
        timeout: Option<Duration>,
    ) -> Result<T, Error> {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        let group = &*self.shared;
        // Uncontended: no lock (see `Shared::fast_path`).
        if group.fast_path_open() {
            return Ok(f());
        }
        let mut st = group.lock();
        if st.shutdown {
            return Err(group.shutdown_error());
        }
        if st.fast_path_open() {
            drop(st);
            return Ok(f());
        }
        let condvar = Arc::new(Condvar::new());
        let (key, _) = st.enqueue(Notify::Thread(condvar.clone()));
        loop {
            match st.waiters[key].status {
                Status::Admitted => break,
                status @ (Status::Shutdown | Status::TimedOut) => {
                    st.waiters.remove(key);
                    return Err(if status == Status::Shutdown {
                        group.shutdown_error()
                    } else {
                        group.timeout_error()
                    });
                }
                Status::Queued => match deadline {
                    None => st.wait(&condvar),
                    Some(deadline) if Instant::now() >= deadline => {
                        st.unqueue(key);
                        st.waiters.remove(key);
                        return Err(group.timeout_error());
                    }
                    Some(deadline) => {
                        st.wait_until(&condvar, deadline);
                    }
                },
            }
        }
        st.waiters.remove(key);
        drop(st);
        let turn = Turn(group);
        let out = f();
        drop(turn);
        Ok(out)
    }

    /// The asynchronous form of
    /// [`run_when_memory_available`](Self::run_when_memory_available), on the
    /// same FIFO queue and with the same admission rules and errors.
    ///
    /// The future is runtime-agnostic: it registers its task's `Waker` and is
    /// woken when admitted, timed out or shut down. It decides at its first
    /// poll (running `f` at once on the fast path) and runs an admitted `f`
    /// inside `poll`. Dropping it while queued removes it from the queue;
    /// dropping it after admission but before the poll that would run `f`
    /// passes the turn on.
    ///
    /// A `timeout` is measured from the first poll. Timeouts are enforced by
    /// one helper thread per group, started on the first async request with
    /// a timeout and stopped when the group is shut down or dropped.
    /// Callers whose runtime has timers may pass `None` and wrap the future
    /// in their runtime's timeout instead (dropping it is clean).
    pub fn run_when_memory_available_async<F, T>(
        &self,
        f: F,
        timeout: Option<Duration>,
    ) -> WhenMemoryAvailable<'_, F>
    where
        F: FnOnce() -> T,
    {
        WhenMemoryAvailable {
            group: &self.shared,
            f: Some(f),
            timeout,
            slot: None,
        }
    }
}

/// The future returned by
/// [`RegionGroup::run_when_memory_available_async`]: resolves to `f`'s
/// result once `f` ran, or to the error that kept it from running.
///
/// # Panics
///
/// Polling it again after it returned `Ready` panics, as for most futures.
#[must_use = "futures do nothing unless polled"]
pub struct WhenMemoryAvailable<'a, F> {
    group: &'a Arc<Shared>,
    f: Option<F>,
    timeout: Option<Duration>,
    /// The waiter's slab key and sequence number while queued or admitted.
    slot: Option<(usize, u64)>,
}

impl<F> std::fmt::Debug for WhenMemoryAvailable<'_, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WhenMemoryAvailable")
            .field("group", &self.group.name())
            .field("done", &self.f.is_none())
            .field("queued", &self.slot.is_some())
            .finish()
    }
}

// `f` is never pinned: it is moved out of the `Option` and called.
impl<F> Unpin for WhenMemoryAvailable<'_, F> {}

impl<F, T> Future for WhenMemoryAvailable<'_, F>
where
    F: FnOnce() -> T,
{
    type Output = Result<T, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let group = this.group;
        assert!(
            this.f.is_some(),
            "WhenMemoryAvailable polled after completion"
        );
        if this.slot.is_none() && group.fast_path_open() {
            // First poll, uncontended: no lock (see `Shared::fast_path`).
            let f = this.f.take().expect("checked above");
            return Poll::Ready(Ok(f()));
        }
        let mut st = group.lock();
        let Some((key, _)) = this.slot else {
            // First poll.
            if st.shutdown {
                this.f = None;
                return Poll::Ready(Err(group.shutdown_error()));
            }
            if st.fast_path_open() {
                drop(st);
                let f = this.f.take().expect("checked above");
                return Poll::Ready(Ok(f()));
            }
            if this.timeout == Some(Duration::ZERO) {
                st.blocked_total += 1;
                this.f = None;
                return Poll::Ready(Err(group.timeout_error()));
            }
            let (key, seq) = st.enqueue(Notify::Task(Some(cx.waker().clone())));
            this.slot = Some((key, seq));
            if let Some(deadline) = this.timeout.and_then(|t| Instant::now().checked_add(t))
                && let Err(err) = timer::schedule(group, &mut st, deadline, key, seq)
            {
                st.unqueue(key);
                st.waiters.remove(key);
                this.slot = None;
                this.f = None;
                return Poll::Ready(Err(Error::TimerUnavailable {
                    group: group.name().to_owned(),
                    reason: err.to_string(),
                }));
            }
            return Poll::Pending;
        };
        match st.waiters[key].status {
            Status::Queued => {
                if let Notify::Task(waker) = &mut st.waiters[key].notify {
                    match waker {
                        Some(w) if w.will_wake(cx.waker()) => {}
                        _ => *waker = Some(cx.waker().clone()),
                    }
                }
                Poll::Pending
            }
            Status::Admitted => {
                st.waiters.remove(key);
                this.slot = None;
                drop(st);
                let turn = Turn(group);
                let f = this.f.take().expect("checked above");
                let out = f();
                drop(turn);
                Poll::Ready(Ok(out))
            }
            status @ (Status::Shutdown | Status::TimedOut) => {
                st.waiters.remove(key);
                this.slot = None;
                this.f = None;
                Poll::Ready(Err(if status == Status::Shutdown {
                    group.shutdown_error()
                } else {
                    group.timeout_error()
                }))
            }
        }
    }
}

impl<F> Drop for WhenMemoryAvailable<'_, F> {
    fn drop(&mut self) {
        let Some((key, _)) = self.slot.take() else {
            return;
        };
        let mut st = self.group.lock();
        match st.waiters[key].status {
            Status::Queued => {
                st.unqueue(key);
                st.waiters.remove(key);
            }
            Status::Admitted => {
                // Admitted but never run: pass the turn on.
                st.waiters.remove(key);
                st.releasing = false;
                self.group.settle(st);
            }
            Status::Shutdown | Status::TimedOut => {
                st.waiters.remove(key);
            }
        }
    }
}
