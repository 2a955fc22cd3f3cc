//! The fair queue's decisions, with no threads and no clock of its own:
//! what to dispatch next, given the classes' shares, what is in flight,
//! and the time the caller says it is. [`IoQueue`](crate::IoQueue) puts
//! threads around it; a simulation drives it directly.

use std::collections::VecDeque;
use std::time::Duration;

use crate::Error;
use crate::capacity::{Capacity, Kind};
use crate::histogram::WaitHistogram;

/// The most classes one queue keeps.
pub const MAX_CLASSES: usize = 64;

/// Accumulated costs are scaled by this before the division by shares,
/// so a class of 1,000 shares still accumulates a request of 1 ns.
const SCALE: u128 = 1 << 20;

/// A class of a queue (its index).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClassId(pub(crate) usize);

impl ClassId {
    /// The class's index in its queue, in the order classes were added.
    pub fn index(self) -> usize {
        self.0
    }
}

/// A queue's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueConfig {
    /// What the device can do: the cost of each request, and its rate
    /// when `rate_limited`.
    pub capacity: Capacity,
    /// The most device time dispatched and not completed, and the rate
    /// bucket's depth.
    pub dispatch_bound: Duration,
    /// Whether dispatch keeps to the capacity's rate (off: only the bound
    /// in flight limits it, and the device's own speed sets the pace).
    pub rate_limited: bool,
}

impl QueueConfig {
    /// A queue for a device of `capacity`, rate-limited, with a dispatch
    /// bound of 2 ms of device time.
    pub fn new(capacity: Capacity) -> Self {
        QueueConfig {
            capacity,
            dispatch_bound: Duration::from_millis(2),
            rate_limited: true,
        }
    }
}

/// One request waiting.
#[derive(Debug, Clone, Copy)]
struct Pending {
    ticket: u64,
    kind: Kind,
    bytes: u64,
    cost: u64,
    queued_at: Duration,
}

/// A request the queue let go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dispatched {
    /// The ticket [`FairQueue::enqueue`] gave it.
    pub ticket: u64,
    /// Its class.
    pub class: ClassId,
    /// Its cost in nanoseconds of device time (give it back to
    /// [`FairQueue::complete`]).
    pub cost: u64,
    /// How long it waited in the queue.
    pub queued: Duration,
}

#[derive(Debug)]
struct Class {
    name: String,
    shares: u32,
    pending: VecDeque<Pending>,
    accumulated: u128,
    ops: u64,
    bytes_read: u64,
    bytes_written: u64,
    device_nanos: u64,
    waits: WaitHistogram,
}

/// One class's figures ([`FairQueue::stats`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ClassStats {
    /// The class's name.
    pub name: String,
    /// Its shares now.
    pub shares: u32,
    /// Requests dispatched.
    pub ops: u64,
    /// Bytes of the reads dispatched.
    pub bytes_read: u64,
    /// Bytes of the writes dispatched.
    pub bytes_written: u64,
    /// Device time of what it dispatched, by the capacity model.
    pub device_time: Duration,
    /// Requests waiting now.
    pub queued_now: usize,
    /// Time queued, median.
    pub queued_p50: Duration,
    /// Time queued, 99th percentile.
    pub queued_p99: Duration,
    /// Time queued, longest.
    pub queued_max: Duration,
}

/// The fair queue of one device: the decisions alone, with no threads and
/// no clock.
///
/// # The rules
///
/// * **Order.** Each class accumulates the cost of what it dispatched
///   divided by its shares. The next request dispatched is the head of
///   the class with the least accumulated (ties: the class added first),
///   so under backlog each class gets device time in proportion to its
///   shares (start-time fair queueing, as Seastar's `fair_queue`). A class
///   that was idle rejoins at the queue's virtual time (the accumulated
///   of the last class dispatched), so idleness banks no credit.
/// * **Shares** are at least 1 (a class of 0 would starve: the flush
///   controller's 0 at no dirty memory is 1 here), and a change takes
///   effect at the next dispatch.
/// * **In flight.** At most the dispatch bound of device time is
///   dispatched and not completed (one request always may be, however
///   large), so a request of the highest share waits at most for that
///   much device time once it is the next to go.
/// * **Rate.** With a rate limit, dispatch also keeps to the device's
///   capacity: a bucket of device time refills at one second per second
///   up to the dispatch bound, and a request goes when the bucket holds
///   its cost (or the whole bound, for a request larger than it), which it
///   then takes (the bucket may go below zero). This keeps the queue here,
///   where it can be reordered, when the device would take requests
///   faster than it serves them (buffered writes complete at once).
///
/// A head that cannot go (in flight or rate) stops the dispatch: no
/// smaller request of another class jumps it, which would break the
/// shares.
#[derive(Debug)]
pub struct FairQueue {
    config: QueueConfig,
    classes: Vec<Class>,
    /// The accumulated of the last class dispatched, before its charge.
    vtime: u128,
    in_flight: usize,
    in_flight_cost: u64,
    /// The rate bucket, in nanoseconds of device time (may be negative).
    tokens: i128,
    refilled_at: Duration,
    next_ticket: u64,
}

impl FairQueue {
    /// An empty queue.
    ///
    /// # Errors
    /// [`Error::ZeroCapacity`], [`Error::ZeroDispatchBound`].
    pub fn new(config: QueueConfig) -> Result<Self, Error> {
        config.capacity.validate()?;
        if config.dispatch_bound.is_zero() {
            return Err(Error::ZeroDispatchBound);
        }
        Ok(FairQueue {
            config,
            classes: Vec::new(),
            vtime: 0,
            in_flight: 0,
            in_flight_cost: 0,
            tokens: config.dispatch_bound.as_nanos() as i128,
            refilled_at: Duration::ZERO,
            next_ticket: 0,
        })
    }

    /// The queue's settings.
    pub fn config(&self) -> &QueueConfig {
        &self.config
    }

    /// Adds a class named `name` with `shares` (at least 1).
    ///
    /// # Errors
    /// [`Error::DuplicateClass`], [`Error::TooManyClasses`].
    pub fn add_class(&mut self, name: &str, shares: u32) -> Result<ClassId, Error> {
        if self.classes.iter().any(|c| c.name == name) {
            return Err(Error::DuplicateClass {
                name: name.to_owned(),
            });
        }
        if self.classes.len() == MAX_CLASSES {
            return Err(Error::TooManyClasses { limit: MAX_CLASSES });
        }
        self.classes.push(Class {
            name: name.to_owned(),
            shares: shares.max(1),
            pending: VecDeque::new(),
            accumulated: self.vtime,
            ops: 0,
            bytes_read: 0,
            bytes_written: 0,
            device_nanos: 0,
            waits: WaitHistogram::default(),
        });
        Ok(ClassId(self.classes.len() - 1))
    }

    fn class_mut(&mut self, class: ClassId) -> Result<&mut Class, Error> {
        self.classes
            .get_mut(class.0)
            .ok_or(Error::UnknownClass { class: class.0 })
    }

    /// Sets `class`'s shares (at least 1); the next dispatch uses them.
    ///
    /// # Errors
    /// [`Error::UnknownClass`].
    pub fn set_shares(&mut self, class: ClassId, shares: u32) -> Result<(), Error> {
        self.class_mut(class)?.shares = shares.max(1);
        Ok(())
    }

    /// `class`'s shares.
    ///
    /// # Errors
    /// [`Error::UnknownClass`].
    pub fn shares(&self, class: ClassId) -> Result<u32, Error> {
        self.classes
            .get(class.0)
            .map(|c| c.shares)
            .ok_or(Error::UnknownClass { class: class.0 })
    }

    /// Queues a request of `kind` and `bytes` in `class` at time `now`;
    /// returns its ticket, which [`dispatch`](Self::dispatch) names when
    /// it lets it go.
    ///
    /// # Errors
    /// [`Error::UnknownClass`].
    pub fn enqueue(
        &mut self,
        class: ClassId,
        kind: Kind,
        bytes: u64,
        now: Duration,
    ) -> Result<u64, Error> {
        let cost = self.config.capacity.cost_nanos(kind, bytes);
        let ticket = self.next_ticket;
        let vtime = self.vtime;
        let c = self.class_mut(class)?;
        if c.pending.is_empty() {
            // Idle until now: rejoin at the virtual time, no banked credit.
            c.accumulated = c.accumulated.max(vtime);
        }
        c.pending.push_back(Pending {
            ticket,
            kind,
            bytes,
            cost,
            queued_at: now,
        });
        self.next_ticket += 1;
        Ok(ticket)
    }

    /// Removes a request still queued (a waiter that gives up); `false`
    /// if it is not queued (dispatched already, or unknown).
    pub fn cancel(&mut self, ticket: u64) -> bool {
        for c in &mut self.classes {
            if let Some(i) = c.pending.iter().position(|p| p.ticket == ticket) {
                c.pending.remove(i);
                return true;
            }
        }
        false
    }

    fn refill(&mut self, now: Duration) {
        if now > self.refilled_at {
            let elapsed = (now - self.refilled_at).as_nanos() as i128;
            let depth = self.config.dispatch_bound.as_nanos() as i128;
            self.tokens = (self.tokens + elapsed).min(depth);
            self.refilled_at = now;
        }
    }

    /// The class whose head goes next.
    fn next_class(&self) -> Option<usize> {
        self.classes
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.pending.is_empty())
            .min_by_key(|(i, c)| (c.accumulated, *i))
            .map(|(i, _)| i)
    }

    /// What the rate bucket must hold for a request of `cost`.
    fn tokens_needed(&self, cost: u64) -> i128 {
        i128::from(cost).min(self.config.dispatch_bound.as_nanos() as i128)
    }

    /// Lets go, in fair order, every request the bound in flight and the
    /// rate allow at `now`, appending them to `out`.
    pub fn dispatch(&mut self, now: Duration, out: &mut Vec<Dispatched>) {
        self.refill(now);
        let bound = u64::try_from(self.config.dispatch_bound.as_nanos()).unwrap_or(u64::MAX);
        while let Some(i) = self.next_class() {
            let head = *self.classes[i]
                .pending
                .front()
                .expect("a class with pending");
            if self.in_flight > 0 && self.in_flight_cost.saturating_add(head.cost) > bound {
                return;
            }
            if self.config.rate_limited && self.tokens < self.tokens_needed(head.cost) {
                return;
            }
            let c = &mut self.classes[i];
            c.pending.pop_front();
            self.vtime = c.accumulated;
            c.accumulated += u128::from(head.cost) * SCALE / u128::from(c.shares);
            c.ops += 1;
            c.device_nanos = c.device_nanos.saturating_add(head.cost);
            match head.kind {
                Kind::Read => c.bytes_read += head.bytes,
                Kind::Write => c.bytes_written += head.bytes,
            }
            let queued = now.saturating_sub(head.queued_at);
            c.waits.record(queued);
            if self.config.rate_limited {
                self.tokens -= i128::from(head.cost);
            }
            self.in_flight += 1;
            self.in_flight_cost = self.in_flight_cost.saturating_add(head.cost);
            out.push(Dispatched {
                ticket: head.ticket,
                class: ClassId(i),
                cost: head.cost,
                queued,
            });
        }
    }

    /// A dispatched request of `cost` completed.
    pub fn complete(&mut self, cost: u64) {
        debug_assert!(self.in_flight > 0, "a completion with nothing in flight");
        self.in_flight = self.in_flight.saturating_sub(1);
        self.in_flight_cost = self.in_flight_cost.saturating_sub(cost);
    }

    /// When the rate will let the next request go, if only the rate holds
    /// it now (`None`: nothing waits, or what waits needs a completion,
    /// or it can go now).
    pub fn ready_at(&self, now: Duration) -> Option<Duration> {
        if !self.config.rate_limited {
            return None;
        }
        let i = self.next_class()?;
        let head = self.classes[i].pending.front()?;
        let bound = u64::try_from(self.config.dispatch_bound.as_nanos()).unwrap_or(u64::MAX);
        if self.in_flight > 0 && self.in_flight_cost.saturating_add(head.cost) > bound {
            return None;
        }
        let elapsed = now.saturating_sub(self.refilled_at).as_nanos() as i128;
        let depth = self.config.dispatch_bound.as_nanos() as i128;
        let tokens = (self.tokens + elapsed).min(depth);
        let short = self.tokens_needed(head.cost) - tokens;
        (short > 0).then(|| now + Duration::from_nanos(u64::try_from(short).unwrap_or(u64::MAX)))
    }

    /// Requests dispatched and not completed.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Requests queued.
    pub fn queued(&self) -> usize {
        self.classes.iter().map(|c| c.pending.len()).sum()
    }

    /// Each class's figures, in the order they were added.
    pub fn stats(&self) -> Vec<ClassStats> {
        self.classes
            .iter()
            .map(|c| ClassStats {
                name: c.name.clone(),
                shares: c.shares,
                ops: c.ops,
                bytes_read: c.bytes_read,
                bytes_written: c.bytes_written,
                device_time: Duration::from_nanos(c.device_nanos),
                queued_now: c.pending.len(),
                queued_p50: c.waits.quantile(0.5),
                queued_p99: c.waits.quantile(0.99),
                queued_max: c.waits.max(),
            })
            .collect()
    }
}
