//! Admission of writes through the group, and the per-memtable policy's
//! wake-ups.

use std::time::Duration;

use crate::config::{FlushPolicy, max_memtable_size};
use crate::error::Error;

use super::DirtyMemoryManager;

impl DirtyMemoryManager {
    /// Runs `f` (a write into a memtable of this group) once the group
    /// admits it: at once if no writer is queued and usage is within the
    /// hard limits, otherwise in FIFO order when memory is released.
    /// `timeout` bounds the wait. Async writers can use the group's
    /// `run_when_memory_available_async` directly (then call
    /// [`notify_usage_changed`](Self::notify_usage_changed) under the
    /// per-memtable policy).
    pub fn run_when_memory_available<T>(
        &self,
        f: impl FnOnce() -> T,
        timeout: Option<Duration>,
    ) -> Result<T, Error> {
        let legacy = matches!(self.policy(), FlushPolicy::PerMemtableLimit { .. });
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
