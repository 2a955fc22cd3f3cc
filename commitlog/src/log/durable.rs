//! The waiting side of an append as a future: [`Durable`], returned by
//! [`CommitLog::add_async`](super::CommitLog::add_async).
//!
//! It shares the group-commit cycle of the blocking `CommitLog::add`: a
//! batch-mode entry is covered by the cycle
//! whose number [`Shared::place`] returned, and the future waits on the
//! same parity slot (`done[cycle % 2]`) as a blocking writer, with its
//! task's `Waker` registered in the slot instead of a thread parked on the
//! slot's condvar. [`Shared::publish`] wakes the slot's tasks after the
//! cycle's fdatasync (never before), under the slot's lock; a future
//! dropped while waiting takes its waker out under the same lock, so once
//! the drop returns its task is never woken. No thread waits to lead a
//! cycle for a future, so in `Batch(0)` an async append wakes the flusher,
//! which runs the cycle.
//!
//! In periodic mode the future is ready at once (with
//! `PeriodicAck::Written` it waits the same way for the cycle that writes
//! its entry, published after the write), except when the sync lags (the
//! oldest unsynced entry is over two intervals old): then it waits,
//! as a blocking writer would, until a sync covers its entry, with its
//! waker in the state's `lag_wakers`, woken by `note_synced`.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use super::Shared;
use crate::sync::{Arc, PlainArc};
use crate::{Error, ReplayPosition};

/// Registered task wakers, by key, each with a value (what it waits for).
#[derive(Debug)]
pub(super) struct Wakers<V> {
    next_key: u64,
    pub(super) map: HashMap<u64, (V, Waker)>,
}

impl<V> Default for Wakers<V> {
    fn default() -> Self {
        Self {
            next_key: 0,
            map: HashMap::new(),
        }
    }
}

impl<V> Wakers<V> {
    /// Registers `waker` under `key` (a new key if `None`), replacing the
    /// waker already there unless it wakes the same task; returns the key.
    fn register(&mut self, key: Option<u64>, value: V, waker: &Waker) -> u64 {
        let key = key.unwrap_or_else(|| {
            self.next_key += 1;
            self.next_key
        });
        match self.map.get_mut(&key) {
            Some((_, w)) if w.will_wake(waker) => {}
            Some(entry) => *entry = (value, waker.clone()),
            None => {
                self.map.insert(key, (value, waker.clone()));
            }
        }
        key
    }

    fn remove(&mut self, key: u64) {
        self.map.remove(&key);
    }

    /// Wakes (and forgets) every task whose value `pred` accepts.
    pub(super) fn wake_where(&mut self, mut pred: impl FnMut(&V) -> bool) {
        if self.map.is_empty() {
            return;
        }
        self.map.retain(|_, (v, w)| {
            if pred(v) {
                w.wake_by_ref();
                false
            } else {
                true
            }
        });
    }

    /// Wakes (and forgets) every task.
    pub(super) fn wake_all(&mut self) {
        for (_, (_, w)) in self.map.drain() {
            w.wake();
        }
    }

    /// Tasks registered.
    #[cfg(all(test, loom))]
    pub(super) fn len(&self) -> usize {
        self.map.len()
    }
}

/// What a [`Durable`] still waits for.
#[derive(Debug, Clone, Copy)]
enum Wait {
    /// Nothing: ready.
    Ready,
    /// Batch mode: the end of cycle `cycle_no`.
    Cycle { cycle_no: u64, key: Option<u64> },
    /// Periodic mode, the sync lagging: a sync reaching `end`.
    Synced {
        end: ReplayPosition,
        key: Option<u64>,
    },
}

/// The future returned by
/// [`CommitLog::add_async`](super::CommitLog::add_async): the entry is
/// placed (it has its position and will be written, whatever becomes of
/// the future); this resolves to the position once the entry is as durable
/// as [`CommitLog::add`](super::CommitLog::add) would have made it on
/// return: in [`SyncMode::Batch`](crate::SyncMode::Batch) once an
/// fdatasync covered it, in [`SyncMode::Periodic`](crate::SyncMode::Periodic)
/// at once, or with [`PeriodicAck::Written`](crate::PeriodicAck::Written)
/// once a cycle wrote it to its segment file (unless the sync lags by over
/// two intervals: then once a sync covered it).
///
/// It is runtime-agnostic: it registers its task's `Waker` with the log,
/// which wakes it from the thread that finished the sync. Dropping it
/// unresolved cancels only the wait: the entry stays in the log (hand it
/// back with [`CommitLog::discard_flushed`](super::CommitLog::discard_flushed)
/// if it will reach no memtable), and the task is never woken after the
/// drop returns. Polling it again after `Ready` returns the same result
/// (the position, or the error again).
///
/// # Errors
/// [`Error::Failed`] if a write or sync failed before the entry was
/// durable.
#[derive(Debug)]
#[must_use = "the entry is not known durable until the future resolves"]
pub struct Durable {
    shared: Arc<Shared>,
    pos: ReplayPosition,
    wait: Wait,
}

impl Durable {
    pub(super) fn ready(shared: Arc<Shared>, pos: ReplayPosition) -> Self {
        Self {
            shared,
            pos,
            wait: Wait::Ready,
        }
    }

    pub(super) fn cycle(shared: Arc<Shared>, pos: ReplayPosition, cycle_no: u64) -> Self {
        Self {
            shared,
            pos,
            wait: Wait::Cycle {
                cycle_no,
                key: None,
            },
        }
    }

    pub(super) fn synced(shared: Arc<Shared>, pos: ReplayPosition, end: ReplayPosition) -> Self {
        Self {
            shared,
            pos,
            wait: Wait::Synced { end, key: None },
        }
    }

    /// The entry's position (known from the start; durable once the
    /// future resolved `Ok`).
    pub fn position(&self) -> ReplayPosition {
        self.pos
    }

    /// Whether the future still waits with a waker registered.
    #[cfg(all(test, loom))]
    pub(crate) fn is_registered(&self) -> bool {
        matches!(
            self.wait,
            Wait::Cycle { key: Some(_), .. } | Wait::Synced { key: Some(_), .. }
        )
    }
}

impl Future for Durable {
    type Output = Result<ReplayPosition, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        match this.wait {
            Wait::Ready => Poll::Ready(Ok(this.pos)),
            Wait::Cycle { cycle_no, key } => {
                let slot = &this.shared.done[(cycle_no % 2) as usize];
                let mut s = slot.state.lock();
                if s.done >= cycle_no {
                    if let Some(k) = key {
                        s.wakers.remove(k);
                    }
                    drop(s);
                    this.wait = Wait::Ready;
                    return Poll::Ready(Ok(this.pos));
                }
                if let Some(e) = &s.failed {
                    let e = PlainArc::clone(e);
                    if let Some(k) = key {
                        s.wakers.remove(k);
                    }
                    // Polled again, it reports the failure again.
                    return Poll::Ready(Err(this.shared.failure(&e)));
                }
                let key = s.wakers.register(key, (), cx.waker());
                this.wait = Wait::Cycle {
                    cycle_no,
                    key: Some(key),
                };
                Poll::Pending
            }
            Wait::Synced { end, key } => {
                let mut st = this.shared.state.lock();
                if st.synced >= end {
                    if let Some(k) = key {
                        st.lag_wakers.remove(k);
                    }
                    drop(st);
                    this.wait = Wait::Ready;
                    return Poll::Ready(Ok(this.pos));
                }
                if let Some(e) = &st.failed {
                    let e = PlainArc::clone(e);
                    if let Some(k) = key {
                        st.lag_wakers.remove(k);
                    }
                    return Poll::Ready(Err(this.shared.failure(&e)));
                }
                let key = st.lag_wakers.register(key, end, cx.waker());
                this.wait = Wait::Synced {
                    end,
                    key: Some(key),
                };
                Poll::Pending
            }
        }
    }
}

impl Drop for Durable {
    fn drop(&mut self) {
        match self.wait {
            Wait::Cycle {
                cycle_no,
                key: Some(k),
            } => {
                self.shared.done[(cycle_no % 2) as usize]
                    .state
                    .lock()
                    .wakers
                    .remove(k);
            }
            Wait::Synced { key: Some(k), .. } => self.shared.state.lock().lag_wakers.remove(k),
            _ => {}
        }
    }
}
