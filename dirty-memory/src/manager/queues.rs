//! The flush queues and the lifecycle of a flush attempt: what runs, what
//! waits (explicit requests, retries), what failed permanently, and the
//! events a [`Flush`](crate::Flush) reports.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Instant;

use region_group::RegionId;
use region_group::RegionListener;

use crate::completion::CompletionCell;
use crate::config::{FlushPolicy, Limits};
use crate::error::Error;
use crate::flush::FlushReason;
use crate::flush::Subject;
use crate::sync::{self, Arc, AtomicBool, Condvar, Mutex};

use super::Inner;

/// A flush attempt that started and has not finished.
#[derive(Debug)]
pub(super) struct Running {
    /// Whether it still holds a data-write permit.
    pub(super) writing: bool,
    pub(super) completion: Option<Arc<CompletionCell>>,
}

/// A flush waiting to start: an explicit request or a retry.
#[derive(Debug)]
pub(super) struct Pending {
    pub(super) region: RegionId,
    pub(super) attempt: u32,
    pub(super) reason: FlushReason,
    pub(super) completion: Option<Arc<CompletionCell>>,
}

/// A failed flush waiting for its back-off to pass.
#[derive(Debug)]
pub(super) struct Retry {
    pub(super) pending: Pending,
    pub(super) due: Instant,
}

#[derive(Debug, Default)]
pub(super) struct Counters {
    pub(super) started: u64,
    pub(super) completed: u64,
    pub(super) failed: u64,
    pub(super) failed_permanently: u64,
    pub(super) retries: u64,
    pub(super) explicit_requests: u64,
    pub(super) explicit_coalesced: u64,
    pub(super) bytes_flushed: u64,
    pub(super) max_data_writers: usize,
}

/// Everything the flush loop decides on, under one lock.
#[derive(Debug)]
pub(super) struct State {
    /// Bumped by every event that can change the loop's decision; the loop
    /// waits for it to change, and discards a decision taken on a stale one.
    pub(super) epoch: u64,
    pub(super) shutdown: bool,
    pub(super) policy: FlushPolicy,
    pub(super) limits: Limits,
    /// Flushes holding a data-write permit.
    pub(super) data_writing: usize,
    /// Flushes started and not finished.
    pub(super) in_flight: usize,
    /// Flushes between giving back their spooled bytes and reporting done:
    /// usage is transiently too high, so the loop does not decide meanwhile.
    pub(super) finishing: usize,
    pub(super) running: BTreeMap<RegionId, Running>,
    /// Explicit requests, in arrival order; they go before pressure flushes.
    pub(super) explicit: VecDeque<Pending>,
    pub(super) retries: Vec<Retry>,
    /// Memtables whose flush failed permanently: kept, grounded, not
    /// retried until an explicit request.
    pub(super) failed_permanently: BTreeSet<RegionId>,
    pub(super) counters: Counters,
}

impl State {
    pub(super) fn new(policy: FlushPolicy, limits: Limits) -> Self {
        State {
            epoch: 0,
            shutdown: false,
            policy,
            limits,
            data_writing: 0,
            in_flight: 0,
            finishing: 0,
            running: BTreeMap::new(),
            explicit: VecDeque::new(),
            retries: Vec::new(),
            failed_permanently: BTreeSet::new(),
            counters: Counters::default(),
        }
    }

    pub(super) fn bump(&mut self) {
        self.epoch = self.epoch.wrapping_add(1);
    }

    /// Takes the retry of `region` out of its back-off, if one waits.
    pub(super) fn take_retry(&mut self, region: RegionId) -> Option<Pending> {
        let i = self
            .retries
            .iter()
            .position(|r| r.pending.region == region)?;
        Some(self.retries.swap_remove(i).pending)
    }
}

/// The lock and condition variable shared with the region group's callbacks.
#[derive(Debug)]
pub(super) struct Shared {
    pub(super) state: Mutex<State>,
    pub(super) changed: Condvar,
    /// Whether `state.policy` is the per-memtable policy, kept beside it
    /// (written under the state lock) so admission, which only needs to
    /// know that, reads it without the lock.
    pub(super) per_memtable: AtomicBool,
}

impl Shared {
    /// The flag [`per_memtable`](Self::per_memtable) holds for `policy`.
    pub(super) fn is_per_memtable(policy: FlushPolicy) -> bool {
        matches!(policy, FlushPolicy::PerMemtableLimit { .. })
    }
}

impl Shared {
    /// Records an event and wakes the loop (and shutdown).
    pub(super) fn poke(&self) {
        self.state.lock().bump();
        self.changed.notify_all();
    }
}

impl<S: ?Sized + Subject> Inner<S> {
    pub(crate) fn on_data_written(&self, region: RegionId) {
        let mut s = self.shared.state.lock();
        if let Some(r) = s.running.get_mut(&region)
            && r.writing
        {
            r.writing = false;
            s.data_writing -= 1;
        }
        s.bump();
        drop(s);
        self.shared.changed.notify_all();
    }

    pub(crate) fn on_finish_begin(&self) {
        let mut s = self.shared.state.lock();
        s.finishing += 1;
        s.bump();
    }

    pub(crate) fn on_finished(&self, region: RegionId, written: u64) {
        let mut s = self.shared.state.lock();
        s.finishing -= 1;
        let completion = Self::end_locked(&mut s, region);
        s.counters.completed += 1;
        s.counters.bytes_flushed = s.counters.bytes_flushed.saturating_add(written);
        s.bump();
        drop(s);
        self.shared.changed.notify_all();
        if let Some(c) = completion {
            c.resolve(Ok(()));
        }
    }

    /// A flush attempt failed: a transient failure is queued for a retry
    /// after its back-off, a permanent one is set aside and reported to the
    /// target once. Either way the memtable stays where it is.
    pub(crate) fn on_failed(&self, region: RegionId, attempt: u32, error: Error) {
        let permanent = error.is_permanent_flush_failure();
        let mut s = self.shared.state.lock();
        let completion = Self::end_locked(&mut s, region);
        s.counters.failed += 1;
        if permanent {
            s.counters.failed_permanently += 1;
            s.failed_permanently.insert(region);
        } else if !s.shutdown {
            s.retries.push(Retry {
                pending: Pending {
                    region,
                    attempt: attempt.saturating_add(1),
                    reason: FlushReason::Retry,
                    completion: None,
                },
                due: sync::deadline_after(sync::now(), self.retry_delay(attempt)),
            });
        }
        s.bump();
        drop(s);
        self.shared.changed.notify_all();
        if permanent {
            self.report_permanent_failure(region, &error);
        }
        if let Some(c) = completion {
            c.resolve(Err(error));
        }
    }

    /// Keeps the memtable out of the policy's choice (the target grounded it
    /// when the flush started; grounding again is harmless) and tells the
    /// target, catching a panic (already reported by the panic hook): the
    /// failure is recorded whatever the target does.
    fn report_permanent_failure(&self, region: RegionId, error: &Error) {
        self.group.ground_evictable(region);
        let target = &self.target;
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            target.flush_failed_permanently(region, error);
        }));
    }

    fn end_locked(s: &mut State, region: RegionId) -> Option<Arc<CompletionCell>> {
        let running = s.running.remove(&region)?;
        if running.writing {
            s.data_writing -= 1;
        }
        s.in_flight -= 1;
        running.completion
    }
}
