//! The flush loop: one turn decides whether to start a flush, and the loop
//! waits for the next event between turns.

use std::time::Duration;

use crate::flush::Subject;
use crate::flush::{Flush, FlushReason};
use crate::sync::{self, Arc};

use super::Inner;
use super::policy::Decision;
use super::queues::{Pending, Running, State};

/// What one turn of the loop did.
#[derive(Debug)]
pub(super) enum Step {
    /// A flush was started; look again at once.
    Started,
    /// The decision was stale; look again at once.
    Again,
    /// Nothing to do until the epoch moves past `epoch` or `timeout` passes.
    Wait {
        epoch: u64,
        timeout: Option<Duration>,
    },
    /// Shut down.
    Exit,
}

impl<S: ?Sized + Subject> Inner<S> {
    /// Marks a flush started (under the lock) and makes its handle.
    fn start_locked(this: &Arc<Self>, s: &mut State, p: Pending) -> Flush<S> {
        s.data_writing += 1;
        s.in_flight += 1;
        s.counters.started += 1;
        if p.reason == FlushReason::Retry || p.attempt > 1 {
            s.counters.retries += 1;
        }
        s.counters.max_data_writers = s.counters.max_data_writers.max(s.data_writing);
        s.failed_permanently.remove(&p.region);
        s.running.insert(
            p.region,
            Running {
                writing: true,
                completion: p.completion,
            },
        );
        Flush::new(Arc::clone(this), p.region, p.attempt, p.reason)
    }

    /// Hands `flush` to the target. A panicking target must not kill the
    /// flush loop (no memtable would ever be flushed again and writers
    /// would wait at the hard limit for ever): the panic, already reported
    /// by the panic hook, drops the handle, which fails the flush, and the
    /// manager retries it after its back-off.
    fn start_flush(&self, mut flush: Flush<S>) {
        flush.load_subject();
        let target = &self.target;
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            target.start_flush(flush);
        }));
    }

    /// One turn of the flush loop.
    pub(super) fn step(this: &Arc<Self>) -> Step {
        let now = sync::now();
        let (epoch, policy, limits, next_retry) = {
            let mut s = this.shared.state.lock();
            if s.shutdown {
                return Step::Exit;
            }
            let epoch = s.epoch;
            let permits_free = s.finishing == 0
                && s.in_flight < this.max_in_flight
                && s.data_writing < s.policy.max_data_writers();
            if !permits_free {
                return Step::Wait {
                    epoch,
                    timeout: None,
                };
            }
            let due = s.retries.iter().position(|r| r.due <= now);
            let pending = match s.explicit.pop_front() {
                Some(p) => Some(p),
                None => due.map(|i| s.retries.swap_remove(i).pending),
            };
            if let Some(p) = pending {
                let flush = Inner::start_locked(this, &mut s, p);
                drop(s);
                this.start_flush(flush);
                return Step::Started;
            }
            let next_retry = s
                .retries
                .iter()
                .map(|r| r.due.saturating_duration_since(now))
                .min();
            (epoch, s.policy, s.limits, next_retry)
        };
        match this.decide(policy, limits) {
            Decision::Flush(region) => {
                let mut s = this.shared.state.lock();
                if s.shutdown {
                    return Step::Exit;
                }
                if s.epoch != epoch {
                    return Step::Again;
                }
                if s.running.contains_key(&region) || s.failed_permanently.contains(&region) {
                    // The target has not grounded it yet: nothing else is
                    // larger, so wait a little rather than spin.
                    return Step::Wait {
                        epoch,
                        timeout: Some(this.idle_backoff),
                    };
                }
                let pending = s.take_retry(region).unwrap_or(Pending {
                    region,
                    attempt: 1,
                    reason: FlushReason::Pressure,
                    completion: None,
                });
                let flush = Inner::start_locked(this, &mut s, pending);
                drop(s);
                this.start_flush(flush);
                Step::Started
            }
            Decision::NothingFlushable => Step::Wait {
                epoch,
                timeout: Some(next_retry.map_or(this.idle_backoff, |r| r.min(this.idle_backoff))),
            },
            Decision::NoPressure => Step::Wait {
                epoch,
                timeout: next_retry,
            },
        }
    }

    /// Waits until the epoch moves past `epoch`, shutdown, or `timeout`.
    pub(super) fn wait_for_change(&self, epoch: u64, timeout: Option<Duration>) {
        // A timeout too long to add to the current time is no timeout.
        let deadline = timeout.and_then(|t| sync::now().checked_add(t));
        let mut s = self.shared.state.lock();
        while s.epoch == epoch && !s.shutdown {
            match deadline {
                None => self.shared.changed.wait(&mut s),
                Some(deadline) => {
                    let now = sync::now();
                    if now >= deadline || self.shared.changed.wait_for(&mut s, deadline - now) {
                        return;
                    }
                }
            }
        }
    }

    /// The loop of [`LoopMode::BackgroundThread`](crate::LoopMode::BackgroundThread).
    pub(super) fn run_loop(this: &Arc<Self>) {
        loop {
            match Inner::step(this) {
                Step::Started | Step::Again => {}
                Step::Wait { epoch, timeout } => this.wait_for_change(epoch, timeout),
                Step::Exit => return,
            }
        }
    }
}
