//! Time as a token bucket sees it: [`SystemClock`] in production,
//! [`ManualClock`] in tests, which moves only when the test advances it, so
//! tests of throttled code never sleep.

use std::fmt;
use std::time::{Duration, Instant};

use crate::sync::{Arc, Condvar, Mutex};

/// Time as a bucket sees it.
pub trait Clock: Send + Sync + fmt::Debug {
    /// Time since the clock's origin; never decreases.
    fn now(&self) -> Duration;

    /// Blocks the calling thread until [`now`](Self::now) reaches
    /// `deadline` (returns at once if it has).
    fn wait_until(&self, deadline: Duration);
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now(&self) -> Duration {
        (**self).now()
    }

    fn wait_until(&self, deadline: Duration) {
        (**self).wait_until(deadline);
    }
}

/// The monotonic system clock, from its creation.
#[derive(Debug, Clone, Copy)]
pub struct SystemClock {
    origin: Instant,
}

impl SystemClock {
    /// A clock whose origin is now.
    pub fn new() -> Self {
        SystemClock {
            origin: Instant::now(),
        }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    /// Sleeps: waiting for time to pass is what a rate limit is, and no
    /// other thread can end the wait sooner, so there is no one to notify.
    fn wait_until(&self, deadline: Duration) {
        loop {
            let now = self.now();
            if now >= deadline {
                return;
            }
            std::thread::sleep(deadline - now);
        }
    }
}

/// A clock that moves only when told to, for tests of throttled code:
/// threads waiting on it block on a condition variable until
/// [`advance`](Self::advance) moves it past their deadline.
#[derive(Debug, Default)]
pub struct ManualClock {
    state: Mutex<ManualState>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct ManualState {
    now: Duration,
    /// The threads blocked in `wait_until` whose deadline is still ahead,
    /// as (ticket, deadline).
    waiting: Vec<(u64, Duration)>,
    next_ticket: u64,
}

impl ManualClock {
    /// A clock at time zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves the clock `by` forward and wakes the waiters.
    pub fn advance(&self, by: Duration) {
        let mut s = self.state.lock();
        s.now += by;
        let now = s.now;
        // Waiters whose deadline passed are no longer waiting, even before
        // they wake and leave.
        s.waiting.retain(|&(_, deadline)| deadline > now);
        self.changed.notify_all();
    }

    /// How many threads are blocked in `wait_until` with a deadline still
    /// ahead.
    pub fn waiting(&self) -> usize {
        self.state.lock().waiting.len()
    }

    /// The earliest deadline a blocked thread waits for.
    pub fn next_deadline(&self) -> Option<Duration> {
        self.state.lock().waiting.iter().map(|&(_, d)| d).min()
    }

    /// Blocks until at least `n` threads are blocked in `wait_until` with
    /// a deadline still ahead.
    pub fn wait_for_waiters(&self, n: usize) {
        let mut s = self.state.lock();
        while s.waiting.len() < n {
            self.changed.wait(&mut s);
        }
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        self.state.lock().now
    }

    fn wait_until(&self, deadline: Duration) {
        let mut s = self.state.lock();
        if s.now >= deadline {
            return;
        }
        let ticket = s.next_ticket;
        s.next_ticket += 1;
        s.waiting.push((ticket, deadline));
        self.changed.notify_all();
        while s.now < deadline {
            self.changed.wait(&mut s);
        }
        // `advance` removed the entry already.
        debug_assert!(s.waiting.iter().all(|&(t, _)| t != ticket));
    }
}
