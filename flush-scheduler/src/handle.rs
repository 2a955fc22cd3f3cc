//! Completion of a flush, shared by every handle of it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::error::FlushError;
use crate::job::{FlushReport, JobKey};
use crate::sync::{Arc, Condvar, Mutex};

/// What a flush resolves to: the report of the successful attempt, or why
/// it did not succeed ([`FlushError::Cancelled`], [`FlushError::GaveUp`]).
pub type FlushResult = Result<FlushReport, FlushError>;

#[derive(Debug, Default)]
struct State {
    result: Option<FlushResult>,
    attempts: u32,
    last_error: Option<FlushError>,
    wakers: Vec<Waker>,
}

/// The completion all handles of one flush share.
#[derive(Debug)]
pub(crate) struct Completion {
    state: Mutex<State>,
    done: Condvar,
}

impl Completion {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State::default()),
            done: Condvar::new(),
        })
    }

    /// Records a failed attempt, visible before the flush resolves.
    pub(crate) fn attempt_failed(&self, attempts: u32, error: FlushError) {
        let mut st = self.state.lock();
        st.attempts = attempts;
        st.last_error = Some(error);
    }

    /// Resolves the flush (once) and wakes every waiter.
    pub(crate) fn resolve(&self, attempts: u32, result: FlushResult) {
        let wakers = {
            let mut st = self.state.lock();
            debug_assert!(st.result.is_none(), "a flush resolves once");
            st.attempts = attempts;
            st.result = Some(result);
            self.done.notify_all();
            std::mem::take(&mut st.wakers)
        };
        wakers.into_iter().for_each(Waker::wake);
    }
}

/// A handle to a submitted flush. Every handle of a flush (including those
/// returned for coalesced submissions, and clones) sees the same result.
///
/// Wait for it with [`wait`](Self::wait) / [`wait_timeout`](Self::wait_timeout),
/// or `.await` it: it implements [`Future`] with plain wakers, so it works
/// in any async runtime.
#[derive(Debug, Clone)]
pub struct FlushHandle {
    key: JobKey,
    completion: Arc<Completion>,
}

impl FlushHandle {
    pub(crate) fn new(key: JobKey, completion: Arc<Completion>) -> Self {
        Self { key, completion }
    }

    /// The memtable being flushed.
    pub fn key(&self) -> JobKey {
        self.key
    }

    /// Blocks until the flush resolves.
    pub fn wait(&self) -> FlushResult {
        let mut st = self.completion.state.lock();
        loop {
            if let Some(result) = &st.result {
                return result.clone();
            }
            self.completion.done.wait(&mut st);
        }
    }

    /// Blocks until the flush resolves or `timeout` passes; `None` on
    /// timeout (the flush goes on).
    pub fn wait_timeout(&self, timeout: Duration) -> Option<FlushResult> {
        let deadline = Instant::now().checked_add(timeout);
        let mut st = self.completion.state.lock();
        loop {
            if let Some(result) = &st.result {
                return Some(result.clone());
            }
            match deadline {
                Some(deadline) => {
                    if self.completion.done.wait_until(&mut st, deadline) {
                        return st.result.clone();
                    }
                }
                None => self.completion.done.wait(&mut st),
            }
        }
    }

    /// The result if the flush has resolved, without blocking.
    pub fn try_result(&self) -> Option<FlushResult> {
        self.completion.state.lock().result.clone()
    }

    /// Attempts made so far (failed ones, plus the final one once resolved).
    pub fn attempts(&self) -> u32 {
        self.completion.state.lock().attempts
    }

    /// The error of the latest failed attempt, visible while the job is
    /// being retried (an explicit flush can show it to the user).
    pub fn last_error(&self) -> Option<FlushError> {
        self.completion.state.lock().last_error.clone()
    }

    /// Whether `self` and `other` are handles of the same flush.
    pub fn same_flush(&self, other: &FlushHandle) -> bool {
        Arc::ptr_eq(&self.completion, &other.completion)
    }
}

impl Future for FlushHandle {
    type Output = FlushResult;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<FlushResult> {
        let mut st = self.completion.state.lock();
        if let Some(result) = &st.result {
            return Poll::Ready(result.clone());
        }
        if !st.wakers.iter().any(|w| w.will_wake(cx.waker())) {
            st.wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}
