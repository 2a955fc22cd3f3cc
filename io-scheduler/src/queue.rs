//! [`IoQueue`]: the fair queue of one device with threads around it. A
//! thread about to do I/O asks for a [`Permit`] in its class and blocks
//! until the queue lets its request go; it does the I/O and drops the
//! permit, which completes the request and lets the next ones go.

use std::fmt;
use std::time::Duration;

use device::Clock;

use crate::Error;
use crate::capacity::Kind;
use crate::fair_queue::{ClassId, ClassStats, Dispatched, FairQueue, QueueConfig};
use crate::sync::{Condvar, Mutex, PlainArc};

struct Shared {
    queue: FairQueue,
    /// Requests let go whose threads have not taken them yet.
    dispatched: Vec<Dispatched>,
    /// A waiter sleeps on the clock for the rate; the others wait on the
    /// condition variable.
    timer_armed: bool,
    closed: bool,
}

/// The fair I/O queue of one device, shared by the threads that do its
/// I/O (see the [crate docs](crate)).
pub struct IoQueue {
    device: String,
    clock: PlainArc<dyn Clock>,
    shared: Mutex<Shared>,
    changed: Condvar,
}

impl fmt::Debug for IoQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IoQueue")
            .field("device", &self.device)
            .finish_non_exhaustive()
    }
}

/// A request the queue let go: do the I/O, then drop it (that completes
/// the request in the queue, and lets the next ones go).
#[must_use = "dropping the permit at once completes the request before its I/O"]
pub struct Permit<'a> {
    queue: &'a IoQueue,
    dispatched: Dispatched,
}

impl fmt::Debug for Permit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit")
            .field("device", &self.queue.device)
            .field("dispatched", &self.dispatched)
            .finish()
    }
}

impl Permit<'_> {
    /// How long the request waited in the queue.
    pub fn queued(&self) -> Duration {
        self.dispatched.queued
    }

    /// The request's class.
    pub fn class(&self) -> ClassId {
        self.dispatched.class
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        let q = self.queue;
        let mut s = q.shared.lock();
        s.queue.complete(self.dispatched.cost);
        q.dispatch(&mut s);
    }
}

/// A queue's figures ([`IoQueue::stats`]).
#[derive(Debug, Clone, PartialEq)]
pub struct QueueStats {
    /// The device's name.
    pub device: String,
    /// Requests dispatched and not completed.
    pub in_flight: usize,
    /// Each class's figures.
    pub classes: Vec<ClassStats>,
}

impl IoQueue {
    /// A queue for the device named `device`, timed by `clock`.
    ///
    /// # Errors
    /// As [`FairQueue::new`].
    pub fn new(
        device: &str,
        config: QueueConfig,
        clock: PlainArc<dyn Clock>,
    ) -> Result<Self, Error> {
        Ok(IoQueue {
            device: device.to_owned(),
            clock,
            shared: Mutex::new(Shared {
                queue: FairQueue::new(config)?,
                dispatched: Vec::new(),
                timer_armed: false,
                closed: false,
            }),
            changed: Condvar::new(),
        })
    }

    /// The device's name.
    pub fn device(&self) -> &str {
        &self.device
    }

    /// Adds a class (see [`FairQueue::add_class`]).
    ///
    /// # Errors
    /// As [`FairQueue::add_class`].
    pub fn add_class(&self, name: &str, shares: u32) -> Result<ClassId, Error> {
        self.shared.lock().queue.add_class(name, shares)
    }

    /// Sets a class's shares; the next dispatch uses them.
    ///
    /// # Errors
    /// [`Error::UnknownClass`].
    pub fn set_shares(&self, class: ClassId, shares: u32) -> Result<(), Error> {
        self.shared.lock().queue.set_shares(class, shares)
    }

    /// Waits until the queue lets a request of `kind` and `bytes` in
    /// `class` go, and returns its permit.
    ///
    /// # Errors
    /// [`Error::UnknownClass`]; [`Error::Closed`] if the queue is or gets
    /// closed before the request goes (it is then removed).
    pub fn submit(&self, class: ClassId, kind: Kind, bytes: u64) -> Result<Permit<'_>, Error> {
        let mut s = self.shared.lock();
        if s.closed {
            return Err(self.closed());
        }
        let ticket = s.queue.enqueue(class, kind, bytes, self.clock.now())?;
        self.dispatch(&mut s);
        loop {
            if let Some(i) = s.dispatched.iter().position(|d| d.ticket == ticket) {
                let dispatched = s.dispatched.swap_remove(i);
                return Ok(Permit {
                    queue: self,
                    dispatched,
                });
            }
            if s.closed {
                s.queue.cancel(ticket);
                return Err(self.closed());
            }
            if !s.timer_armed
                && let Some(at) = s.queue.ready_at(self.clock.now())
            {
                // Only the rate holds the queue: this thread waits for
                // the time, for every waiter, and dispatches then.
                s.timer_armed = true;
                drop(s);
                self.clock.wait_until(at);
                s = self.shared.lock();
                s.timer_armed = false;
                self.dispatch(&mut s);
                // Another waiter may have to take the timer on.
                self.changed.notify_all();
                continue;
            }
            self.changed.wait(&mut s);
        }
    }

    /// Dispatches what can go now and wakes the waiters if anything went.
    fn dispatch(&self, s: &mut Shared) {
        let before = s.dispatched.len();
        let now = self.clock.now();
        s.queue.dispatch(now, &mut s.dispatched);
        if s.dispatched.len() > before {
            self.changed.notify_all();
        }
    }

    /// Closes the queue: waiting requests fail with [`Error::Closed`], and
    /// so does every later submit. Permits already given complete as
    /// usual.
    pub fn close(&self) {
        self.shared.lock().closed = true;
        self.changed.notify_all();
    }

    fn closed(&self) -> Error {
        Error::Closed {
            device: self.device.clone(),
        }
    }

    /// The queue's figures.
    pub fn stats(&self) -> QueueStats {
        let s = self.shared.lock();
        QueueStats {
            device: self.device.clone(),
            in_flight: s.queue.in_flight(),
            classes: s.queue.stats(),
        }
    }
}
