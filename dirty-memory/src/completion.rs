//! The shared completion of an explicit flush request.

use std::fmt;
use std::time::Duration;

use region_group::RegionId;

use crate::error::Error;
use crate::sync::{Arc, Condvar, Mutex};

/// The result slot shared by every request that coalesced into one flush.
#[derive(Debug)]
pub(crate) struct CompletionCell {
    region: RegionId,
    result: Mutex<Option<Result<(), Error>>>,
    done: Condvar,
}

impl CompletionCell {
    pub(crate) fn new(region: RegionId) -> Arc<Self> {
        Arc::new(CompletionCell {
            region,
            result: Mutex::new(None),
            done: Condvar::new(),
        })
    }

    /// Stores the result (the first one wins) and wakes every waiter.
    pub(crate) fn resolve(&self, result: Result<(), Error>) {
        let mut slot = self.result.lock();
        if slot.is_none() {
            *slot = Some(result);
        }
        drop(slot);
        self.done.notify_all();
    }
}

/// A handle on the outcome of an explicit flush request.
///
/// Requests for the same memtable made while its flush is queued or running
/// share one completion: every clone sees the same result. The result is that
/// of the flush attempt the requests joined: `Ok(())` once the memtable's
/// flush finished, or the attempt's error: [`Error::FlushFailed`] for a
/// transient failure (the manager retries it in the background; a later
/// request joins or starts the retry), [`Error::FlushFailedPermanently`] for
/// a permanent one (not retried unless a later request asks).
///
/// This is the one completion of the flush path: the executor
/// (`flush-scheduler`) has none of its own.
#[derive(Clone)]
pub struct FlushCompletion {
    cell: Arc<CompletionCell>,
}

impl fmt::Debug for FlushCompletion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FlushCompletion")
            .field("region", &self.cell.region)
            .field("result", &*self.cell.result.lock())
            .finish()
    }
}

impl FlushCompletion {
    pub(crate) fn new(cell: Arc<CompletionCell>) -> Self {
        FlushCompletion { cell }
    }

    /// The region whose flush this is.
    pub fn region(&self) -> RegionId {
        self.cell.region
    }

    /// Whether `self` and `other` wait for the same flush (coalesced requests).
    pub fn same_flush(&self, other: &FlushCompletion) -> bool {
        Arc::ptr_eq(&self.cell, &other.cell)
    }

    /// The result, if the flush has completed.
    pub fn try_result(&self) -> Option<Result<(), Error>> {
        self.cell.result.lock().clone()
    }

    /// Blocks until the flush completes.
    pub fn wait(&self) -> Result<(), Error> {
        let mut slot = self.cell.result.lock();
        loop {
            if let Some(result) = slot.as_ref() {
                return result.clone();
            }
            self.cell.done.wait(&mut slot);
        }
    }

    /// Blocks until the flush completes or `timeout` passes; `None` on timeout.
    pub fn wait_timeout(&self, timeout: Duration) -> Option<Result<(), Error>> {
        let Some(deadline) = crate::sync::now().checked_add(timeout) else {
            return Some(self.wait());
        };
        let mut slot = self.cell.result.lock();
        loop {
            if let Some(result) = slot.as_ref() {
                return Some(result.clone());
            }
            let now = crate::sync::now();
            if now >= deadline {
                return None;
            }
            self.cell.done.wait_for(&mut slot, deadline - now);
        }
    }
}
