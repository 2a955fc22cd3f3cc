//! Admission of writes through the group, and the per-memtable policy's
//! wake-ups.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use region_group::WhenMemoryAvailable;

use crate::config::{FlushPolicy, max_memtable_size};
use crate::error::Error;
use crate::flush::Subject;
use crate::sync::Ordering;

use super::DirtyMemoryManager;

impl<S: ?Sized + Subject> DirtyMemoryManager<S> {
    /// Runs `f` (a write into a memtable of this group) once the group
    /// admits it: at once if no writer is queued and usage is within the
    /// hard limits, otherwise in FIFO order when memory is released.
    /// `timeout` bounds the wait. Async writers use
    /// [`run_when_memory_available_async`](Self::run_when_memory_available_async).
    pub fn run_when_memory_available<T>(
        &self,
        f: impl FnOnce() -> T,
        timeout: Option<Duration>,
    ) -> Result<T, Error> {
        // The policy's kind without the state lock (see `Shared::per_memtable`).
        let legacy = self.inner.shared.per_memtable.load(Ordering::Relaxed);
        if legacy && !self.inner.group.execution_permitted() {
            // The per-memtable policy's safety net: wake the loop.
            self.inner.shared.poke();
        }
        let value = self
            .inner
            .group
            .run_when_memory_available(f, timeout)
            .map_err(|source| Error::Admission {
                manager: self.inner.name.clone(),
                source,
            })?;
        if legacy {
            self.notify_usage_changed();
        }
        Ok(value)
    }

    /// The asynchronous form of
    /// [`run_when_memory_available`](Self::run_when_memory_available): the
    /// same FIFO queue of the group, admission rules, timeout and errors,
    /// through the group's
    /// [`run_when_memory_available_async`](region_group::RegionGroup::run_when_memory_available_async)
    /// (runtime-agnostic: it registers its task's waker; an admitted `f`
    /// runs inside `poll`), and the same wake-ups of the flush loop under
    /// the per-memtable policy.
    ///
    /// Dropping the future before `f` ran leaves the queue as if it never
    /// asked: `f` never runs, and a turn it was given passes on.
    ///
    /// # Errors
    /// The future resolves to [`Error::Admission`] (naming the manager,
    /// with the group's error as its source) if the write timed out or the
    /// group shut down.
    pub fn run_when_memory_available_async<F, T>(
        &self,
        f: F,
        timeout: Option<Duration>,
    ) -> WhenAdmitted<'_, F, S>
    where
        F: FnOnce() -> T,
    {
        // The policy's kind without the state lock (see `Shared::per_memtable`).
        let legacy = self.inner.shared.per_memtable.load(Ordering::Relaxed);
        if legacy && !self.inner.group.execution_permitted() {
            // As the blocking form: the per-memtable policy's safety net.
            self.inner.shared.poke();
        }
        WhenAdmitted {
            manager: self,
            inner: self.inner.group.run_when_memory_available_async(f, timeout),
            legacy,
        }
    }

    /// Tells the loop that memtables grew outside
    /// [`run_when_memory_available`](Self::run_when_memory_available) (for
    /// example after a write admitted through the group's async admission).
    /// Only the per-memtable policy needs it (the default policy is woken by
    /// the group's soft-limit callback); cheap when there is nothing to do.
    pub fn notify_usage_changed(&self) {
        let s = self.inner.shared.state.lock();
        let (policy, limits) = (s.policy, s.limits);
        // With no free data-write slot the loop cannot act now; it looks
        // again when a flush releases its slot.
        let can_start =
            s.data_writing < policy.max_data_writers() && s.in_flight < self.inner.max_in_flight;
        drop(s);
        if !can_start {
            return;
        }
        if let FlushPolicy::PerMemtableLimit {
            max_memtable_fraction,
            ..
        } = policy
        {
            let max = max_memtable_size(limits.real_hard, max_memtable_fraction);
            if self
                .inner
                .largest_flushable()
                .is_some_and(|(_, size)| size >= max)
            {
                self.inner.shared.poke();
            }
        }
    }
}

/// The future returned by
/// [`DirtyMemoryManager::run_when_memory_available_async`]: resolves to
/// `f`'s result once the group admitted it and it ran, or to
/// [`Error::Admission`] (timed out, shut down).
///
/// # Panics
///
/// Polling it again after it returned `Ready` panics, as the group's
/// future does.
#[must_use = "futures do nothing unless polled"]
pub struct WhenAdmitted<'a, F, S: ?Sized + Subject = ()> {
    manager: &'a DirtyMemoryManager<S>,
    inner: WhenMemoryAvailable<'a, F>,
    legacy: bool,
}

impl<F, S: ?Sized + Subject> std::fmt::Debug for WhenAdmitted<'_, F, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WhenAdmitted")
            .field("manager", &self.manager.inner.name)
            .field("inner", &self.inner)
            .finish()
    }
}

impl<F, T, S: ?Sized + Subject> Future for WhenAdmitted<'_, F, S>
where
    F: FnOnce() -> T,
{
    type Output = Result<T, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Every field is `Unpin` (the group's future is, whatever `F`).
        let this = self.get_mut();
        let value = match Pin::new(&mut this.inner).poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Ok(value)) => value,
            Poll::Ready(Err(source)) => {
                return Poll::Ready(Err(Error::Admission {
                    manager: this.manager.inner.name.clone(),
                    source,
                }));
            }
        };
        if this.legacy {
            this.manager.notify_usage_changed();
        }
        Poll::Ready(Ok(value))
    }
}
