//! The manager: limits, the flush loop, explicit flushes, admission.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::time::{Duration, Instant};

use region_group::RegionId;
use region_group::{ReclaimConfig, RegionGroup};

use crate::completion::{CompletionCell, FlushCompletion};
use crate::config::{DirtyMemoryConfig, FlushPolicy, Limits, LoopMode};
use crate::error::Error;
use crate::flush::{Flush, FlushReason, FlushTarget};
use crate::metrics::DirtyMemoryMetrics;
use crate::sync::{self, Arc, Condvar, JoinHandle, Mutex};

/// A flush attempt that started and has not finished.
#[derive(Debug)]
struct Running {
    writing: bool,
    completion: Option<Arc<CompletionCell>>,
}

/// A flush waiting to start: an explicit request or a retry.
#[derive(Debug)]
struct Pending {
    region: RegionId,
    attempt: u32,
    reason: FlushReason,
    completion: Option<Arc<CompletionCell>>,
}

/// A failed flush waiting for its back-off to pass.
#[derive(Debug)]
struct Retry {
    pending: Pending,
    due: Instant,
}

#[derive(Debug, Default)]
struct Counters {
    started: u64,
    completed: u64,
    failed: u64,
    retries: u64,
    explicit_requests: u64,
    explicit_coalesced: u64,
    bytes_flushed: u64,
    max_data_writers: usize,
}

/// Everything the flush loop decides on, under one lock.
#[derive(Debug)]
struct State {
    /// Bumped by every event that can change the loop's decision; the loop
    /// waits for it to change, and discards a decision taken on a stale one.
    epoch: u64,
    shutdown: bool,
    policy: FlushPolicy,
    limits: Limits,
    /// Flushes holding a data-write permit.
    data_writing: usize,
    /// Flushes started and not finished.
    in_flight: usize,
    /// Flushes between giving back their spooled bytes and reporting done:
    /// usage is transiently too high, so the loop does not decide meanwhile.
    finishing: usize,
    running: BTreeMap<RegionId, Running>,
    /// Explicit requests, in arrival order; they go before pressure flushes.
    explicit: VecDeque<Pending>,
    retries: Vec<Retry>,
    counters: Counters,
}

impl State {
    fn bump(&mut self) {
        self.epoch = self.epoch.wrapping_add(1);
    }
}

/// The lock and condition variable shared with the region group's callbacks.
#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    /// Records an event and wakes the loop (and shutdown).
    fn poke(&self) {
        self.state.lock().bump();
        self.changed.notify_all();
    }
}

/// What one turn of the loop did.
#[derive(Debug)]
enum Step {
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

/// What the policy wants, read from the group without the state lock.
#[derive(Debug)]
enum Decision {
    Flush(RegionId),
    NothingFlushable,
    NoPressure,
}

/// The part of the manager shared with the flush thread and flush handles.
pub(crate) struct Inner {
    name: String,
    group: Arc<RegionGroup>,
    shared: Arc<Shared>,
    target: Arc<dyn FlushTarget>,
    max_in_flight: usize,
    idle_backoff: Duration,
    retry_backoff_min: Duration,
    retry_backoff_max: Duration,
    mode: LoopMode,
    /// Serialises `poll_flushes` callers in manual mode, so only one thread
    /// ever starts flushes.
    stepping: Mutex<()>,
}

impl Inner {
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn group(&self) -> &RegionGroup {
        &self.group
    }

    pub(crate) fn group_arc(&self) -> &Arc<RegionGroup> {
        &self.group
    }

    /// The largest region that can be flushed, with its size.
    fn largest_flushable(&self) -> Option<(RegionId, usize)> {
        let region = self.group.largest_flushable_region()?;
        let (size, grounded) = self.group.region_size(region)?;
        (size > 0 && !grounded).then_some((region, size))
    }

    fn shut_down_error(&self) -> Error {
        Error::ShutDown {
            manager: self.name.clone(),
        }
    }

    fn retry_delay(&self, failed_attempt: u32) -> Duration {
        let doublings = failed_attempt.saturating_sub(1).min(30);
        self.retry_backoff_min
            .saturating_mul(1u32 << doublings)
            .min(self.retry_backoff_max)
    }

    /// Marks a flush started (under the lock) and makes its handle.
    fn start_locked(self: &Arc<Self>, s: &mut State, p: Pending) -> Flush {
        s.data_writing += 1;
        s.in_flight += 1;
        s.counters.started += 1;
        if p.reason == FlushReason::Retry || p.attempt > 1 {
            s.counters.retries += 1;
        }
        s.counters.max_data_writers = s.counters.max_data_writers.max(s.data_writing);
        s.running.insert(
            p.region,
            Running {
                writing: true,
                completion: p.completion,
            },
        );
        Flush::new(Arc::clone(self), p.region, p.attempt, p.reason)
    }

    /// Hands `flush` to the target. A panicking target must not kill the
    /// flush loop (no memtable would ever be flushed again and writers
    /// would wait at the hard limit for ever): the panic, already reported
    /// by the panic hook, drops the handle, which fails the flush, and the
    /// manager retries it after its back-off.
    fn start_flush(&self, flush: Flush) {
        let target = &self.target;
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            target.start_flush(flush);
        }));
    }

    /// Reads the group (never under the state lock: the group calls back
    /// into it) and applies the policy.
    fn decide(&self, policy: FlushPolicy, limits: Limits) -> Decision {
        let unspooled = self.group.unspooled_usage();
        let flushable = || self.largest_flushable();
        match policy {
            FlushPolicy::LargestAtSoftLimit => {
                if unspooled <= limits.soft {
                    return Decision::NoPressure;
                }
                flushable().map_or(Decision::NothingFlushable, |(r, _)| Decision::Flush(r))
            }
            FlushPolicy::PerMemtableLimit {
                max_memtable_fraction,
                ..
            } => {
                let max = limits.max_memtable_size(max_memtable_fraction);
                let writers_held =
                    unspooled > limits.hard || self.group.real_usage() > limits.budget;
                match flushable() {
                    Some((r, size)) if size >= max || writers_held => Decision::Flush(r),
                    _ if writers_held => Decision::NothingFlushable,
                    _ => Decision::NoPressure,
                }
            }
        }
    }

    /// One turn of the flush loop.
    fn step(self: &Arc<Self>) -> Step {
        let now = sync::now();
        let (epoch, policy, limits, next_retry) = {
            let mut s = self.shared.state.lock();
            if s.shutdown {
                return Step::Exit;
            }
            let epoch = s.epoch;
            let permits_free = s.finishing == 0
                && s.in_flight < self.max_in_flight
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
                let flush = self.start_locked(&mut s, p);
                drop(s);
                self.start_flush(flush);
                return Step::Started;
            }
            let next_retry = s
                .retries
                .iter()
                .map(|r| r.due.saturating_duration_since(now))
                .min();
            (epoch, s.policy, s.limits, next_retry)
        };
        match self.decide(policy, limits) {
            Decision::Flush(region) => {
                let mut s = self.shared.state.lock();
                if s.shutdown {
                    return Step::Exit;
                }
                if s.epoch != epoch {
                    return Step::Again;
                }
                if s.running.contains_key(&region) {
                    // The target has not grounded it yet: nothing else is
                    // larger, so wait a little rather than spin.
                    return Step::Wait {
                        epoch,
                        timeout: Some(self.idle_backoff),
                    };
                }
                let pending = match s.retries.iter().position(|r| r.pending.region == region) {
                    Some(i) => s.retries.swap_remove(i).pending,
                    None => Pending {
                        region,
                        attempt: 1,
                        reason: FlushReason::Pressure,
                        completion: None,
                    },
                };
                let flush = self.start_locked(&mut s, pending);
                drop(s);
                self.start_flush(flush);
                Step::Started
            }
            Decision::NothingFlushable => Step::Wait {
                epoch,
                timeout: Some(next_retry.map_or(self.idle_backoff, |r| r.min(self.idle_backoff))),
            },
            Decision::NoPressure => Step::Wait {
                epoch,
                timeout: next_retry,
            },
        }
    }

    /// Waits until the epoch moves past `epoch`, shutdown, or `timeout`.
    fn wait_for_change(&self, epoch: u64, timeout: Option<Duration>) {
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

    fn run_loop(self: &Arc<Self>) {
        loop {
            match self.step() {
                Step::Started | Step::Again => {}
                Step::Wait { epoch, timeout } => self.wait_for_change(epoch, timeout),
                Step::Exit => return,
            }
        }
    }

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
        let completion = self.end_locked(&mut s, region);
        s.counters.completed += 1;
        s.counters.bytes_flushed = s.counters.bytes_flushed.saturating_add(written);
        s.bump();
        drop(s);
        self.shared.changed.notify_all();
        if let Some(c) = completion {
            c.resolve(Ok(()));
        }
    }

    pub(crate) fn on_failed(&self, region: RegionId, attempt: u32, error: Error) {
        let mut s = self.shared.state.lock();
        let completion = self.end_locked(&mut s, region);
        s.counters.failed += 1;
        if !s.shutdown {
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
        if let Some(c) = completion {
            c.resolve(Err(error));
        }
    }

    fn end_locked(&self, s: &mut State, region: RegionId) -> Option<Arc<CompletionCell>> {
        let running = s.running.remove(&region)?;
        if running.writing {
            s.data_writing -= 1;
        }
        s.in_flight -= 1;
        running.completion
    }
}

/// The dirty-memory manager of one group of memtables.
///
/// It owns a [`RegionGroup`] whose limits come from a budget (unspooled soft
/// limit = `soft_limit_ratio` of it, unspooled hard limit = half of it, real
/// hard limit = all of it), admits writes through that group, and runs a
/// flush loop that asks a [`FlushTarget`] to flush memtables according to a
/// [`FlushPolicy`]. Memtables join by listening to [`group`](Self::group).
///
/// Dropping the manager shuts it down (see [`shutdown`](Self::shutdown)).
pub struct DirtyMemoryManager {
    inner: Arc<Inner>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl fmt::Debug for DirtyMemoryManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DirtyMemoryManager")
            .field("name", &self.inner.name)
            .field("metrics", &self.metrics())
            .finish_non_exhaustive()
    }
}

impl DirtyMemoryManager {
    /// Creates a manager (and, in [`LoopMode::BackgroundThread`], its flush
    /// thread). Fails on an invalid configuration.
    pub fn new(config: DirtyMemoryConfig, target: Arc<dyn FlushTarget>) -> Result<Self, Error> {
        config.validate()?;
        let limits = Limits::for_budget(config.budget, config.soft_limit_ratio)?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                epoch: 0,
                shutdown: false,
                policy: config.policy,
                limits,
                data_writing: 0,
                in_flight: 0,
                finishing: 0,
                running: BTreeMap::new(),
                explicit: VecDeque::new(),
                retries: Vec::new(),
                counters: Counters::default(),
            }),
            changed: Condvar::new(),
        });
        let on_start = Arc::clone(&shared);
        let on_stop = Arc::clone(&shared);
        let group = RegionGroup::new(
            config.name.clone(),
            ReclaimConfig {
                unspooled_hard_limit: limits.hard,
                unspooled_soft_limit: limits.soft,
                real_hard_limit: limits.budget,
                start_reclaiming: Some(Arc::new(move || on_start.poke())),
                stop_reclaiming: Some(Arc::new(move || on_stop.poke())),
            },
        );
        let inner = Arc::new(Inner {
            name: config.name.clone(),
            group,
            shared,
            target,
            max_in_flight: config.max_flushes_in_flight,
            idle_backoff: config.idle_backoff,
            retry_backoff_min: config.retry_backoff_min,
            retry_backoff_max: config.retry_backoff_max,
            mode: config.loop_mode,
            stepping: Mutex::new(()),
        });
        let thread = match config.loop_mode {
            LoopMode::Manual => None,
            LoopMode::BackgroundThread => {
                let looper = Arc::clone(&inner);
                let handle =
                    sync::spawn(format!("{}-flush", config.name), move || looper.run_loop())
                        .map_err(|e| Error::Spawn {
                            manager: config.name.clone(),
                            source: Arc::new(e),
                        })?;
                Some(handle)
            }
        };
        Ok(DirtyMemoryManager {
            inner,
            thread: Mutex::new(thread),
        })
    }

    /// The manager's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The region group: memtables' regions listen to it, and tests can
    /// drive usage through its [`RegionListener`](region_group::RegionListener)
    /// implementation.
    pub fn group(&self) -> &Arc<RegionGroup> {
        &self.inner.group
    }

    /// The current limits.
    pub fn limits(&self) -> Limits {
        self.inner.shared.state.lock().limits
    }

    /// The current flush policy.
    pub fn policy(&self) -> FlushPolicy {
        self.inner.shared.state.lock().policy
    }

    /// Switches the flush policy at run time. Flushes already running are
    /// not affected.
    pub fn set_policy(&self, policy: FlushPolicy) -> Result<(), Error> {
        policy.validate()?;
        let mut s = self.inner.shared.state.lock();
        s.policy = policy;
        s.bump();
        drop(s);
        self.inner.shared.changed.notify_all();
        Ok(())
    }

    /// Changes the budget (and with it every limit) at run time, keeping
    /// the soft-limit ratio.
    pub fn set_budget(&self, budget: usize, soft_limit_ratio: f64) -> Result<(), Error> {
        let limits = Limits::for_budget(budget, soft_limit_ratio)?;
        self.inner
            .group
            .update_limits(limits.hard, limits.soft, limits.budget);
        self.inner.shared.state.lock().limits = limits;
        self.inner.shared.poke();
        Ok(())
    }

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
            let max = limits.max_memtable_size(max_memtable_fraction);
            if self
                .inner
                .largest_flushable()
                .is_some_and(|(_, size)| size >= max)
            {
                self.inner.shared.poke();
            }
        }
    }

    /// Asks for the memtable of `region` to be flushed, before any pressure
    /// flush (a user flushing a table, or the owner flushing every memtable
    /// before [`shutdown`](Self::shutdown)). Requests for a memtable whose
    /// flush is already queued or running share that flush's completion; a
    /// request for a memtable waiting to retry a failed flush starts the
    /// retry at once. Explicit flushes take the same data-write permit as
    /// pressure flushes.
    pub fn request_flush(&self, region: RegionId) -> Result<FlushCompletion, Error> {
        if self.inner.group.region_size(region).is_none() {
            return Err(Error::UnknownRegion {
                manager: self.inner.name.clone(),
                region,
            });
        }
        let mut s = self.inner.shared.state.lock();
        if s.shutdown {
            return Err(self.inner.shut_down_error());
        }
        s.counters.explicit_requests += 1;
        let cell = if let Some(running) = s.running.get_mut(&region) {
            let cell = running
                .completion
                .get_or_insert_with(|| CompletionCell::new(region));
            let cell = Arc::clone(cell);
            s.counters.explicit_coalesced += 1;
            cell
        } else if let Some(p) = s.explicit.iter().find(|p| p.region == region) {
            let cell = Arc::clone(
                p.completion
                    .as_ref()
                    .expect("explicit requests carry a completion"),
            );
            s.counters.explicit_coalesced += 1;
            cell
        } else {
            let cell = CompletionCell::new(region);
            let pending = match s.retries.iter().position(|r| r.pending.region == region) {
                Some(i) => {
                    // The explicit request overtakes the retry's back-off.
                    let mut p = s.retries.swap_remove(i).pending;
                    p.completion = Some(Arc::clone(&cell));
                    p
                }
                None => Pending {
                    region,
                    attempt: 1,
                    reason: FlushReason::Explicit,
                    completion: Some(Arc::clone(&cell)),
                },
            };
            s.explicit.push_back(pending);
            s.bump();
            cell
        };
        drop(s);
        self.inner.shared.changed.notify_all();
        Ok(FlushCompletion::new(cell))
    }

    /// In [`LoopMode::Manual`], runs the flush loop's decisions on the
    /// calling thread until it would wait, and returns how many flushes it
    /// started. Errors with [`Error::NotManual`] otherwise.
    pub fn poll_flushes(&self) -> Result<usize, Error> {
        if self.inner.mode != LoopMode::Manual {
            return Err(Error::NotManual {
                manager: self.inner.name.clone(),
            });
        }
        let _only_stepper = self.inner.stepping.lock();
        let mut started = 0;
        loop {
            match self.inner.step() {
                Step::Started => started += 1,
                Step::Again => {}
                Step::Wait { .. } | Step::Exit => return Ok(started),
            }
        }
    }

    /// A snapshot of the metrics.
    pub fn metrics(&self) -> DirtyMemoryMetrics {
        let group = self.inner.group.metrics();
        let s = self.inner.shared.state.lock();
        DirtyMemoryMetrics {
            real_dirty: group.real_usage,
            unspooled_dirty: group.unspooled_usage,
            peak_real_dirty: group.peak_real_usage,
            budget: s.limits.budget,
            soft_limit: s.limits.soft,
            hard_limit: s.limits.hard,
            flushes_started: s.counters.started,
            flushes_completed: s.counters.completed,
            flushes_failed: s.counters.failed,
            flush_retries: s.counters.retries,
            explicit_requests: s.counters.explicit_requests,
            explicit_coalesced: s.counters.explicit_coalesced,
            bytes_flushed: s.counters.bytes_flushed,
            writers_blocked: group.blocked_requests_total,
            writers_waiting: group.queued_requests,
            time_blocked: group.blocked_time_total,
            writing: s
                .running
                .iter()
                .filter(|(_, r)| r.writing)
                .map(|(id, _)| *id)
                .collect(),
            flushes_in_flight: s.in_flight,
            max_concurrent_data_writers: s.counters.max_data_writers,
            retries_pending: s.retries.len(),
        }
    }

    /// Stops the manager: no new flush starts (queued explicit requests and
    /// pending retries complete with [`Error::ShutDown`]), the flush thread
    /// exits, flushes in flight (tails included) are waited for, then the
    /// group is shut down (queued writers fail). Idempotent.
    ///
    /// Must not be called by a thread that holds an unfinished [`Flush`].
    pub fn shutdown(&self) {
        self.stop(true);
    }

    fn stop(&self, wait_for_flushes: bool) {
        let abandoned: Vec<Arc<CompletionCell>> = {
            let mut s = self.inner.shared.state.lock();
            s.shutdown = true;
            s.bump();
            let explicit = std::mem::take(&mut s.explicit);
            let retries = std::mem::take(&mut s.retries);
            explicit
                .into_iter()
                .chain(retries.into_iter().map(|r| r.pending))
                .filter_map(|p| p.completion)
                .collect()
        };
        self.inner.shared.changed.notify_all();
        for cell in abandoned {
            cell.resolve(Err(self.inner.shut_down_error()));
        }
        if let Some(handle) = self.thread.lock().take() {
            // A panic on the flush thread has already been reported by the
            // panic hook; stopping carries on regardless.
            let _ = handle.join();
        }
        if wait_for_flushes {
            let mut s = self.inner.shared.state.lock();
            while s.in_flight > 0 {
                self.inner.shared.changed.wait(&mut s);
            }
        }
        self.inner.group.shutdown();
    }
}

/// Dropping stops the manager like [`shutdown`](DirtyMemoryManager::shutdown)
/// but does not wait for flushes in flight: their [`Flush`] handles keep
/// what they need alive and finish on their own.
impl Drop for DirtyMemoryManager {
    fn drop(&mut self) {
        self.stop(false);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use region_group::RegionListener;

    use super::*;

    /// Keeps every flush it is given.
    #[derive(Debug, Default)]
    struct Keep(Mutex<Vec<Flush>>);

    impl FlushTarget for Keep {
        fn start_flush(&self, flush: Flush) {
            flush.group().ground_evictable(flush.region());
            self.0.lock().push(flush);
        }
    }

    fn manual(budget: usize) -> (DirtyMemoryManager, Arc<Keep>) {
        let keep = Arc::new(Keep::default());
        let mut config = DirtyMemoryConfig::new("unit", budget);
        config.loop_mode = LoopMode::Manual;
        config.max_flushes_in_flight = 2;
        config.policy = FlushPolicy::PerMemtableLimit {
            max_memtable_fraction: 0.1,
            max_concurrent_flushes: 8,
        };
        let target: Arc<dyn FlushTarget> = keep.clone();
        (DirtyMemoryManager::new(config, target).unwrap(), keep)
    }

    #[test]
    fn retry_delay_doubles_up_to_the_cap() {
        let (m, _) = manual(1000);
        let delays: Vec<_> = (1..=9).map(|a| m.inner.retry_delay(a)).collect();
        assert_eq!(delays[0], Duration::from_millis(100));
        assert_eq!(delays[1], Duration::from_millis(200));
        assert_eq!(delays[6], Duration::from_millis(6400));
        assert_eq!(delays[7], Duration::from_secs(10));
        assert_eq!(m.inner.retry_delay(u32::MAX), Duration::from_secs(10));
    }

    #[test]
    fn tails_in_flight_are_bounded() {
        let (m, keep) = manual(1000);
        for r in 1..=4 {
            m.group().add(RegionId::from_raw(r), 150); // each over 10%
        }
        // Eight data writers allowed, but only two flushes in flight.
        assert_eq!(m.poll_flushes().unwrap(), 2);
        for f in keep.0.lock().iter_mut() {
            f.data_written(); // into their tails: still in flight
        }
        assert_eq!(m.poll_flushes().unwrap(), 0);
        let first = keep.0.lock().remove(0);
        first.finish();
        assert_eq!(m.poll_flushes().unwrap(), 1);
        assert_eq!(m.metrics().flushes_in_flight, 2);
        let rest: Vec<_> = keep.0.lock().drain(..).collect();
        rest.into_iter().for_each(Flush::finish);
    }

    #[test]
    fn set_budget_moves_every_limit_and_the_group_follows() {
        let (m, _) = manual(1000);
        m.set_budget(4000, 0.25).unwrap();
        assert_eq!(
            m.limits(),
            Limits {
                budget: 4000,
                soft: 1000,
                hard: 2000
            }
        );
        let g = m.group().limits();
        assert_eq!(
            (g.unspooled_soft, g.unspooled_hard, g.real_hard),
            (1000, 2000, 4000)
        );
        assert!(matches!(
            m.set_budget(4000, 0.9),
            Err(Error::InvalidSoftLimitRatio { .. })
        ));
        assert_eq!(m.limits().budget, 4000);
    }

    #[test]
    fn poll_needs_manual_mode_and_shutdown_is_idempotent() {
        let keep: Arc<dyn FlushTarget> = Arc::new(Keep::default());
        let m = DirtyMemoryManager::new(DirtyMemoryConfig::new("bg", 1000), keep).unwrap();
        let err = m.poll_flushes().unwrap_err();
        assert_eq!(
            err.to_string(),
            "bg: poll_flushes needs LoopMode::Manual, but this manager runs its own flush thread"
        );
        m.shutdown();
        m.shutdown();
        let refused = m.run_when_memory_available(|| (), None).unwrap_err();
        assert!(matches!(refused, Error::Admission { .. }), "{refused}");
    }

    #[test]
    fn invalid_configs_are_refused() {
        let keep: Arc<dyn FlushTarget> = Arc::new(Keep::default());
        let mut config = DirtyMemoryConfig::new("bad", 2);
        assert!(matches!(
            DirtyMemoryManager::new(config.clone(), Arc::clone(&keep)),
            Err(Error::BudgetTooSmall { budget: 2, min: 4 })
        ));
        config.budget = 1000;
        config.soft_limit_ratio = 0.0;
        assert!(DirtyMemoryManager::new(config, keep).is_err());
    }
}
