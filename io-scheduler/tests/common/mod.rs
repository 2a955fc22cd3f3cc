//! A modelled device under a fair queue, in simulated time: the device
//! serves what the queue dispatches one request after another, each for
//! its cost (so at exactly the queue's capacity), and backlogged classes
//! keep their queues full.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use io_scheduler::{ClassId, Dispatched, FairQueue, Kind};

/// One backlogged class: the size of its requests and how many it keeps
/// queued.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Load {
    pub(crate) class: ClassId,
    pub(crate) kind: Kind,
    pub(crate) bytes: u64,
    pub(crate) depth: usize,
}

/// The simulation: the queue, the device's completions, the time.
pub(crate) struct Sim {
    pub(crate) queue: FairQueue,
    pub(crate) now: Duration,
    /// Requests on the device: (completion time, cost).
    busy: BinaryHeap<Reverse<(Duration, u64)>>,
    /// When the device has served everything dispatched so far.
    free_at: Duration,
    /// Requests of each load still queued.
    queued: Vec<usize>,
    pub(crate) dispatched: Vec<(Duration, Dispatched)>,
}

impl Sim {
    pub(crate) fn new(queue: FairQueue, loads: usize) -> Self {
        Sim {
            queue,
            now: Duration::ZERO,
            busy: BinaryHeap::new(),
            free_at: Duration::ZERO,
            queued: vec![0; loads],
            dispatched: Vec::new(),
        }
    }

    /// Queues one request of `class` now (beside the backlogged loads).
    pub(crate) fn submit_once(&mut self, class: ClassId, kind: Kind, bytes: u64) -> u64 {
        self.queue.enqueue(class, kind, bytes, self.now).unwrap()
    }

    /// Runs until `until`, keeping `loads` backlogged.
    pub(crate) fn run(&mut self, loads: &[Load], until: Duration) {
        let mut out = Vec::new();
        while self.now < until {
            for (i, l) in loads.iter().enumerate() {
                while self.queued[i] < l.depth {
                    self.queue
                        .enqueue(l.class, l.kind, l.bytes, self.now)
                        .unwrap();
                    self.queued[i] += 1;
                }
            }
            out.clear();
            self.queue.dispatch(self.now, &mut out);
            for d in &out {
                if let Some(i) = loads.iter().position(|l| l.class == d.class) {
                    self.queued[i] -= 1;
                }
                self.dispatched.push((self.now, *d));
                let done = self.free_at.max(self.now) + Duration::from_nanos(d.cost);
                self.free_at = done;
                self.busy.push(Reverse((done, d.cost)));
            }
            if self.busy.is_empty()
                && self.queue.queued() == 0
                && self.queue.ready_at(self.now).is_none()
                && loads.is_empty()
            {
                self.now = until;
                break;
            }
            // Next event: a completion, or the rate letting the next go.
            let completion = self.busy.peek().map(|Reverse((t, _))| *t);
            let ready = self.queue.ready_at(self.now);
            let next = match (completion, ready) {
                (Some(c), Some(r)) => c.min(r),
                (Some(c), None) => c,
                (None, Some(r)) => r,
                (None, None) => until,
            };
            self.now = next.max(self.now);
            while let Some(Reverse((t, cost))) = self.busy.peek().copied() {
                if t > self.now {
                    break;
                }
                self.busy.pop();
                self.queue.complete(cost);
            }
        }
    }

    /// Device time dispatched per class in `[from, to)`.
    pub(crate) fn device_time(&self, class: ClassId, from: Duration, to: Duration) -> u64 {
        self.dispatched
            .iter()
            .filter(|(t, d)| d.class == class && *t >= from && *t < to)
            .map(|(_, d)| d.cost)
            .sum()
    }
}
