//! The manager: one group of memtables, its limits, and the flush loop
//! that decides when and what to flush.
//!
//! By concern:
//!
//! * [`policy`]: which memtable to flush, and the retry back-off;
//! * [`flush_loop`]: the loop's turns and waits;
//! * [`queues`]: running flushes, explicit requests, retries, permanent
//!   failures, and the events a [`Flush`](crate::Flush) reports;
//! * [`admission`]: writes admitted through the group;
//! * [`metrics`](mod@metrics): the metrics snapshot;
//! * this file: the manager's construction, configuration, explicit
//!   requests and shutdown.

mod admission;
pub use admission::WhenAdmitted;
mod flush_loop;
mod metrics;
mod policy;
mod queues;

use std::fmt;
use std::time::Duration;

use region_group::RegionId;
use region_group::{ReclaimConfig, RegionGroup};

use crate::completion::{CompletionCell, FlushCompletion};
use crate::config::{DirtyMemoryConfig, FlushPolicy, Limits, LoopMode, limits_for_budget};
use crate::error::Error;
use crate::flush::{FlushReason, FlushTarget, Subject};
use crate::sync::{self, Arc, AtomicBool, Condvar, JoinHandle, Mutex, Ordering, PlainArc};

use self::flush_loop::Step;
use self::queues::{Pending, Shared, State};

/// The part of the manager shared with the flush thread and flush handles.
pub(crate) struct Inner<S: ?Sized + Subject> {
    name: String,
    group: PlainArc<RegionGroup<S>>,
    shared: Arc<Shared>,
    target: PlainArc<dyn FlushTarget<S>>,
    max_in_flight: usize,
    idle_backoff: Duration,
    retry_backoff_min: Duration,
    retry_backoff_max: Duration,
    mode: LoopMode,
    /// Serialises `poll_flushes` callers in manual mode, so only one thread
    /// ever starts flushes.
    stepping: Mutex<()>,
}

impl<S: ?Sized + Subject> Inner<S> {
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn group(&self) -> &RegionGroup<S> {
        &self.group
    }

    pub(crate) fn group_arc(&self) -> &PlainArc<RegionGroup<S>> {
        &self.group
    }

    fn shut_down_error(&self) -> Error {
        Error::ShutDown {
            manager: self.name.clone(),
        }
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
/// `S` is what each memtable's region carries for its flushes (its
/// *subject*: the memtable and its table, say), attached to the region in
/// the group ([`RegionGroup::set_region_owner`]) and handed to the target
/// with each [`Flush`](crate::Flush) ([`Flush::subject`](crate::Flush::subject)),
/// so the target needs no registry of its own from regions back to
/// memtables. [`new`](DirtyMemoryManager::new) makes a manager whose
/// regions carry nothing (`S = ()`), [`with_subjects`](Self::with_subjects)
/// one whose regions carry an `S`.
///
/// Dropping the manager shuts it down (see [`shutdown`](Self::shutdown)).
pub struct DirtyMemoryManager<S: ?Sized + Subject = ()> {
    inner: Arc<Inner<S>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl<S: ?Sized + Subject> fmt::Debug for DirtyMemoryManager<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DirtyMemoryManager")
            .field("name", &self.inner.name)
            .field("metrics", &self.metrics())
            .finish_non_exhaustive()
    }
}

impl DirtyMemoryManager {
    /// Creates a manager (and, in [`LoopMode::BackgroundThread`], its flush
    /// thread) whose regions carry no subject. Fails on an invalid
    /// configuration.
    pub fn new(
        config: DirtyMemoryConfig,
        target: PlainArc<dyn FlushTarget>,
    ) -> Result<Self, Error> {
        DirtyMemoryManager::with_subjects(config, target)
    }
}

impl<S: ?Sized + Subject> DirtyMemoryManager<S> {
    /// Creates a manager, as [`new`](DirtyMemoryManager::new) does, whose
    /// regions carry an `S` each for their flushes.
    pub fn with_subjects(
        config: DirtyMemoryConfig,
        target: PlainArc<dyn FlushTarget<S>>,
    ) -> Result<Self, Error> {
        config.validate()?;
        let limits = limits_for_budget(config.budget, config.soft_limit_ratio)?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State::new(config.policy, limits)),
            changed: Condvar::new(),
            per_memtable: AtomicBool::new(Shared::is_per_memtable(config.policy)),
        });
        let on_start = Arc::clone(&shared);
        let on_stop = Arc::clone(&shared);
        let group = RegionGroup::with_owners(
            config.name.clone(),
            ReclaimConfig {
                unspooled_hard_limit: limits.unspooled_hard,
                unspooled_soft_limit: limits.unspooled_soft,
                real_hard_limit: limits.real_hard,
                start_reclaiming: Some(PlainArc::new(move || on_start.poke())),
                stop_reclaiming: Some(PlainArc::new(move || on_stop.poke())),
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
                let handle = sync::spawn(format!("{}-flush", config.name), move || {
                    Inner::run_loop(&looper)
                })
                .map_err(|e| Error::Spawn {
                    manager: config.name.clone(),
                    source: PlainArc::new(e),
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
    pub fn group(&self) -> &PlainArc<RegionGroup<S>> {
        &self.inner.group
    }

    /// The current limits (the group's: [`RegionGroup::limits`] reports the
    /// same).
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
        self.inner
            .shared
            .per_memtable
            .store(Shared::is_per_memtable(policy), Ordering::Relaxed);
        s.bump();
        drop(s);
        self.inner.shared.changed.notify_all();
        Ok(())
    }

    /// Changes the budget (and with it every limit) at run time, keeping
    /// the soft-limit ratio.
    pub fn set_budget(&self, budget: usize, soft_limit_ratio: f64) -> Result<(), Error> {
        let limits = limits_for_budget(budget, soft_limit_ratio)?;
        self.inner.group.update_limits(
            limits.unspooled_hard,
            limits.unspooled_soft,
            limits.real_hard,
        );
        self.inner.shared.state.lock().limits = limits;
        self.inner.shared.poke();
        Ok(())
    }

    /// Asks for the memtable of `region` to be flushed, before any pressure
    /// flush (a user flushing a table, or the owner flushing every memtable
    /// before [`shutdown`](Self::shutdown)). Requests for a memtable whose
    /// flush is already queued or running share that flush's completion; a
    /// request for a memtable waiting to retry a failed flush starts the
    /// retry at once; a request for a memtable whose flush failed
    /// permanently tries it again (attempt 1). Explicit flushes take the
    /// same data-write permit as pressure flushes.
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
            let pending = match s.take_retry(region) {
                Some(mut p) => {
                    // The explicit request overtakes the retry's back-off.
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
            match Inner::step(&self.inner) {
                Step::Started => started += 1,
                Step::Again => {}
                Step::Wait { .. } | Step::Exit => return Ok(started),
            }
        }
    }

    /// Stops the manager: no new flush starts (queued explicit requests and
    /// pending retries complete with [`Error::ShutDown`]), the flush thread
    /// exits, flushes in flight (tails included) are waited for, then the
    /// group is shut down (queued writers fail). Idempotent.
    ///
    /// Must not be called by a thread that holds an unfinished [`Flush`](crate::Flush).
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
/// but does not wait for flushes in flight: their [`Flush`](crate::Flush) handles keep
/// what they need alive and finish on their own.
impl<S: ?Sized + Subject> Drop for DirtyMemoryManager<S> {
    fn drop(&mut self) {
        self.stop(false);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use region_group::RegionListener;

    use super::*;
    use crate::flush::Flush;

    /// Keeps every flush it is given.
    #[derive(Debug, Default)]
    struct Keep(Mutex<Vec<Flush>>);

    impl FlushTarget for Keep {
        fn start_flush(&self, flush: Flush) {
            flush.group().ground_evictable(flush.region());
            self.0.lock().push(flush);
        }

        fn flush_failed_permanently(&self, region: RegionId, error: &Error) {
            panic!("no flush fails here, yet {region} did: {error}");
        }
    }

    fn manual(budget: usize) -> (DirtyMemoryManager, PlainArc<Keep>) {
        let keep = PlainArc::new(Keep::default());
        let mut config = DirtyMemoryConfig::new("unit", budget);
        config.loop_mode = LoopMode::Manual;
        config.max_flushes_in_flight = 2;
        config.policy = FlushPolicy::PerMemtableLimit {
            max_memtable_fraction: 0.1,
            max_concurrent_flushes: 8,
        };
        let target: PlainArc<dyn FlushTarget> = keep.clone();
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
                unspooled_soft: 1000,
                unspooled_hard: 2000,
                real_hard: 4000,
            }
        );
        assert_eq!(m.group().limits(), m.limits());
        assert!(matches!(
            m.set_budget(4000, 0.9),
            Err(Error::InvalidSoftLimitRatio { .. })
        ));
        assert_eq!(m.limits().real_hard, 4000);
    }

    #[test]
    fn poll_needs_manual_mode_and_shutdown_is_idempotent() {
        let keep: PlainArc<dyn FlushTarget> = PlainArc::new(Keep::default());
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
        let keep: PlainArc<dyn FlushTarget> = PlainArc::new(Keep::default());
        let mut config = DirtyMemoryConfig::new("bad", 2);
        assert!(matches!(
            DirtyMemoryManager::new(config.clone(), PlainArc::clone(&keep)),
            Err(Error::BudgetTooSmall { budget: 2, min: 4 })
        ));
        config.budget = 1000;
        config.soft_limit_ratio = 0.0;
        assert!(DirtyMemoryManager::new(config, keep).is_err());
    }
}
