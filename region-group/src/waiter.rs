//! A queued request's slot in the group: its status and how to wake it.

use std::task::Waker;
use std::time::Instant;

use crate::sync::{Arc, Condvar};

/// Where a queued request stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    /// Waiting in the queue.
    Queued,
    /// Taken off the queue: it may run now, and no other request is admitted
    /// until it finishes (or its owner gives the turn back).
    Admitted,
    /// The group shut down while it waited.
    Shutdown,
    /// Its async timeout expired while it waited.
    TimedOut,
}

/// How to wake a waiter's owner.
#[derive(Debug)]
pub(crate) enum Notify {
    /// A blocked thread waiting on its own condition variable (with the
    /// group mutex).
    Thread(Arc<Condvar>),
    /// A future; `None` until first registered or after being taken.
    Task(Option<Waker>),
}

/// A wake-up to perform once the group lock is released.
#[derive(Debug)]
pub(crate) enum Wake {
    Thread(Arc<Condvar>),
    Task(Waker),
}

impl Wake {
    pub(crate) fn wake(self) {
        match self {
            Wake::Thread(condvar) => condvar.notify_one(),
            Wake::Task(waker) => waker.wake(),
        }
    }
}

/// A blocked request, owned (and finally removed from the slab) by the
/// thread or future that queued it.
#[derive(Debug)]
pub(crate) struct Waiter {
    pub(crate) seq: u64,
    pub(crate) status: Status,
    pub(crate) notify: Notify,
    pub(crate) queued_at: Instant,
}

impl Waiter {
    /// What to do, after unlocking, to make the owner look at its status.
    pub(crate) fn take_wake(&mut self) -> Option<Wake> {
        match &mut self.notify {
            Notify::Thread(condvar) => Some(Wake::Thread(condvar.clone())),
            Notify::Task(waker) => waker.take().map(Wake::Task),
        }
    }
}
