//! [`RegionGroup`]: the accounting, the soft limit and the region ordering.
//!
//! All mutable state lives in one [`State`] behind one mutex. Every change
//! goes through [`RegionGroup::settle`], which (still under the lock) records
//! a soft-limit crossing if there was one and admits the next queued request
//! if memory allows, then (after unlocking) wakes the admitted request and
//! delivers pending reclaim callbacks in order.

use std::collections::VecDeque;
use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use logalloc::{RegionId, RegionListener};
use slab::Slab;

use crate::config::{Limits, ReclaimCallback, ReclaimConfig};
use crate::error::Error;
use crate::sync::{Arc, AtomicBool, Condvar, Mutex, MutexGuard, Ordering, PlainArc};
use crate::timer::TimerState;
use crate::tracker::RegionTracker;
use crate::waiter::{Status, Waiter, Wake};

/// A soft-limit crossing waiting to be reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Crossing {
    Start,
    Stop,
}

/// One [`RealPin`]'s state.
#[derive(Debug)]
struct Pin {
    /// The region whose departure fills the pin (`None` once it left).
    region: Option<RegionId>,
    /// Bytes still held.
    bytes: usize,
}

/// Everything the group's mutex protects.
#[derive(Debug)]
pub(crate) struct State {
    /// Footprint of the group's regions: segments held plus handle tables and slot lists.
    pub(crate) real: usize,
    /// Real usage held by [`RealPin`]s: counted against the real hard
    /// limit, not in unspooled usage.
    pinned: usize,
    /// The pins: each waits for its region to leave, then holds what the
    /// region held until released.
    pins: Slab<Pin>,
    /// Bytes declared written out (net of reverts), by `account_spooled` or
    /// attributed to a region by `account_region_spooled`.
    pub(crate) spooled: usize,
    /// The part of `spooled` attributed to regions (the sum of their
    /// entries' `spooled`): it leaves with its region, and shrinks with it.
    attributed: usize,
    pub(crate) limits: Limits,
    /// Whether unspooled usage was above the soft limit at the last check.
    reclaiming: bool,
    /// Crossings not yet reported through the callbacks, oldest first.
    crossings: VecDeque<Crossing>,
    /// Whether some thread is delivering `crossings` right now.
    delivering: bool,
    pub(crate) regions: RegionTracker,
    /// Blocked requests; each owner removes its own entry.
    pub(crate) waiters: Slab<Waiter>,
    /// Keys into `waiters` of the requests still queued, in arrival order.
    pub(crate) queue: VecDeque<usize>,
    /// An admitted request is running (or about to); no other is admitted
    /// until it finishes.
    pub(crate) releasing: bool,
    pub(crate) shutdown: bool,
    /// Sequence numbers tell a waiter apart from a later one in the same slot.
    pub(crate) next_seq: u64,
    peak_real: usize,
    peak_unspooled: usize,
    pub(crate) blocked_total: u64,
    pub(crate) blocked_time: Duration,
    pub(crate) timer: TimerState,
}

impl State {
    pub(crate) fn unspooled(&self) -> usize {
        self.real.saturating_sub(self.spooled)
    }

    /// Real usage: the regions' footprint plus the pinned bytes.
    pub(crate) fn real_total(&self) -> usize {
        self.real.saturating_add(self.pinned)
    }

    /// Usage is within every hard limit (equal is within).
    pub(crate) fn permitted(&self) -> bool {
        self.unspooled() <= self.limits.unspooled_hard && self.real_total() <= self.limits.real_hard
    }

    /// A newcomer may run at once: nothing queued or being released, not shut
    /// down, and memory within the limits.
    pub(crate) fn fast_path_open(&self) -> bool {
        !self.shutdown && self.queue.is_empty() && !self.releasing && self.permitted()
    }

    fn note_peaks(&mut self) {
        self.peak_real = self.peak_real.max(self.real_total());
        self.peak_unspooled = self.peak_unspooled.max(self.unspooled());
    }

    /// Admits the head of the queue if nothing is being released and memory
    /// allows. At most one request per check: the admitted one must finish
    /// before the next check admits another.
    fn admit_next(&mut self) -> Option<Wake> {
        if self.releasing || self.shutdown || !self.permitted() {
            return None;
        }
        let key = self.queue.pop_front()?;
        self.releasing = true;
        let waiter = &mut self.waiters[key];
        waiter.status = Status::Admitted;
        let waited = waiter.queued_at.elapsed();
        let wake = waiter.take_wake();
        self.blocked_time += waited;
        wake
    }

    /// Removes the queued waiter `key` from the queue (timeout, cancel).
    pub(crate) fn unqueue(&mut self, key: usize) {
        if let Some(pos) = self.queue.iter().position(|&k| k == key) {
            self.queue.remove(pos);
        }
        let waited = self.waiters[key].queued_at.elapsed();
        self.blocked_time += waited;
    }
}

/// A snapshot of a group's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupMetrics {
    /// Footprint of the group's regions (segments held plus handle tables
    /// and slot lists) plus the bytes held by
    /// [`RegionGroup::pin_on_leave`]'s pins.
    pub real_usage: usize,
    /// Real usage minus bytes accounted as spooled (0 if that would be negative).
    pub unspooled_usage: usize,
    /// Bytes accounted as spooled.
    pub spooled: usize,
    /// Highest real usage seen.
    pub peak_real_usage: usize,
    /// Highest unspooled usage seen.
    pub peak_unspooled_usage: usize,
    /// Requests waiting in the queue now.
    pub queued_requests: usize,
    /// Requests that ever had to wait (were queued).
    pub blocked_requests_total: u64,
    /// Total time requests spent queued, summed over requests.
    pub blocked_time_total: Duration,
    /// Regions reporting to the group.
    pub regions: usize,
    /// Whether unspooled usage is above the soft limit.
    pub reclaiming: bool,
}

/// The group's state, locked; unlocking (or waiting) publishes whether a
/// newcomer may take the fast path ([`Shared::fast_path`]).
pub(crate) struct Locked<'a> {
    guard: MutexGuard<'a, State>,
    fast_path: &'a AtomicBool,
}

impl Locked<'_> {
    fn publish(&self) {
        self.fast_path
            .store(self.guard.fast_path_open(), Ordering::Release);
    }

    /// Waits on `condvar`, the lock released meanwhile.
    pub(crate) fn wait(&mut self, condvar: &Condvar) {
        self.publish();
        condvar.wait(&mut self.guard);
    }

    /// Waits on `condvar` until `deadline` at the latest.
    pub(crate) fn wait_until(&mut self, condvar: &Condvar, deadline: std::time::Instant) {
        self.publish();
        condvar.wait_until(&mut self.guard, deadline);
    }
}

impl std::ops::Deref for Locked<'_> {
    type Target = State;

    fn deref(&self) -> &State {
        &self.guard
    }
}

impl std::ops::DerefMut for Locked<'_> {
    fn deref_mut(&mut self) -> &mut State {
        &mut self.guard
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        // Still under the lock: the guard unlocks after this.
        self.publish();
    }
}

/// The part of a group shared with its timer thread.
pub(crate) struct Shared {
    pub(crate) name: String,
    pub(crate) state: Mutex<State>,
    /// Whether a newcomer may run at once ([`State::fast_path_open`]), as
    /// the state was when its lock was last released through
    /// [`RegionGroup::lock`]: admission reads it without taking the lock,
    /// so an uncontended write takes no group-wide lock. Every change that
    /// can close the fast path (usage over a limit, a queued or admitted
    /// request, shutdown) is made under [`Locked`], which publishes the
    /// flag before it unlocks, so the flag is never open when the state
    /// is not; a reader that saw it open is ordered before the change that
    /// closed it, as if it had taken the lock first. The timeout thread
    /// only removes waiters (it can open the path, never close it) and
    /// leaves the flag to the next unlock: a stale closed flag only sends
    /// a writer the locked way.
    pub(crate) fast_path: AtomicBool,
    /// The async-timeout thread waits on this.
    pub(crate) timer_cv: Condvar,
    start_reclaiming: Option<ReclaimCallback>,
    stop_reclaiming: Option<ReclaimCallback>,
}

impl Shared {
    /// The group's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn lock(&self) -> Locked<'_> {
        Locked {
            guard: self.state.lock(),
            fast_path: &self.fast_path,
        }
    }

    /// Whether a newcomer may run at once, without the lock (see
    /// [`Shared::fast_path`]).
    pub(crate) fn fast_path_open(&self) -> bool {
        self.fast_path.load(Ordering::Acquire)
    }

    pub(crate) fn timeout_error(&self) -> Error {
        Error::Timeout {
            group: self.name.clone(),
        }
    }

    pub(crate) fn shutdown_error(&self) -> Error {
        Error::Shutdown {
            group: self.name.clone(),
        }
    }

    /// Finishes a state change: records a soft-limit crossing, admits the next
    /// request if memory allows, unlocks, wakes it, and delivers crossings.
    pub(crate) fn settle(&self, mut st: Locked<'_>) {
        let over = st.unspooled() > st.limits.unspooled_soft;
        if over != st.reclaiming {
            st.reclaiming = over;
            st.crossings.push_back(if over {
                Crossing::Start
            } else {
                Crossing::Stop
            });
        }
        let wake = st.admit_next();
        let deliver = !st.delivering && !st.crossings.is_empty();
        if deliver {
            st.delivering = true;
        }
        drop(st);
        if let Some(wake) = wake {
            wake.wake();
        }
        if deliver {
            self.deliver_crossings();
        }
    }

    /// Reports pending crossings in order, one callback at a time, with the
    /// lock released around each callback. Only one thread delivers at a
    /// time; crossings recorded meanwhile (even by a callback calling back
    /// into the group) are delivered by the same loop.
    fn deliver_crossings(&self) {
        /// Lets a later change deliver again if a callback panics.
        struct Delivering<'a>(Option<&'a Shared>);
        impl Drop for Delivering<'_> {
            fn drop(&mut self) {
                if let Some(group) = self.0 {
                    group.lock().delivering = false;
                }
            }
        }
        let mut delivering = Delivering(Some(self));
        loop {
            let crossing = {
                let mut st = self.lock();
                match st.crossings.pop_front() {
                    Some(crossing) => crossing,
                    None => {
                        // Give up the role under the same lock that saw the
                        // queue empty, so no crossing recorded after this can
                        // be left undelivered.
                        st.delivering = false;
                        delivering.0 = None;
                        return;
                    }
                }
            };
            let callback = match crossing {
                Crossing::Start => &self.start_reclaiming,
                Crossing::Stop => &self.stop_reclaiming,
            };
            if let Some(callback) = callback {
                callback();
            }
        }
    }
}

/// A set of regions whose summed memory is limited.
///
/// The group learns of its regions only through the [`RegionListener`]
/// callbacks (see [`SizeTrackedRegion`](crate::SizeTrackedRegion) for a
/// region that listens from birth). From them it keeps two counters:
///
/// * **real** usage: its regions' footprint (segments held plus handle tables and slot lists);
/// * **unspooled** usage: real minus the bytes callers declared already
///   written out ([`account_spooled`](Self::account_spooled)).
///
/// Listener deltas change both; `account_spooled`/`revert_spooled` change
/// only unspooled. The counters drive the soft limit (reclaim callbacks,
/// see [`ReclaimConfig`]) and the hard limits (writers wait in
/// [`run_when_memory_available`](Self::run_when_memory_available)), and the
/// group orders its regions by size for [`largest_region`](Self::largest_region).
pub struct RegionGroup<O: ?Sized + Send + Sync + 'static = ()> {
    pub(crate) shared: Arc<Shared>,
    /// The type of what region owners attach
    /// ([`set_region_owner`](Self::set_region_owner)).
    owner: PhantomData<fn() -> PlainArc<O>>,
}

impl<O: ?Sized + Send + Sync + 'static> fmt::Debug for RegionGroup<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegionGroup")
            .field("name", &self.shared.name)
            .field("metrics", &self.metrics())
            .finish()
    }
}

impl RegionGroup {
    /// Creates a group named `name` (the name appears in every error),
    /// whose regions have no owners attached (see
    /// [`with_owners`](Self::with_owners) for a group whose regions do).
    ///
    /// A soft limit above the unspooled hard limit is lowered to it (see
    /// [`ReclaimConfig`]).
    pub fn new(name: impl Into<String>, config: ReclaimConfig) -> PlainArc<RegionGroup> {
        RegionGroup::with_owners(name, config)
    }
}

impl<O: ?Sized + Send + Sync + 'static> RegionGroup<O> {
    /// Creates a group named `name`, as [`new`](RegionGroup::new) does,
    /// whose regions' owners are of type `O`
    /// ([`set_region_owner`](Self::set_region_owner)).
    pub fn with_owners(name: impl Into<String>, config: ReclaimConfig) -> PlainArc<RegionGroup<O>> {
        let limits = Limits::new(
            config.unspooled_hard_limit,
            config.unspooled_soft_limit,
            config.real_hard_limit,
        );
        let state = State {
            real: 0,
            pinned: 0,
            pins: Slab::new(),
            spooled: 0,
            attributed: 0,
            limits,
            reclaiming: false,
            crossings: VecDeque::new(),
            delivering: false,
            regions: RegionTracker::default(),
            waiters: Slab::new(),
            queue: VecDeque::new(),
            releasing: false,
            shutdown: false,
            next_seq: 0,
            peak_real: 0,
            peak_unspooled: 0,
            blocked_total: 0,
            blocked_time: Duration::ZERO,
            timer: TimerState::default(),
        };
        PlainArc::new(RegionGroup {
            shared: Arc::new(Shared {
                name: name.into(),
                fast_path: AtomicBool::new(state.fast_path_open()),
                state: Mutex::new(state),
                timer_cv: Condvar::new(),
                start_reclaiming: config.start_reclaiming,
                stop_reclaiming: config.stop_reclaiming,
            }),
            owner: PhantomData,
        })
    }

    /// The group's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    pub(crate) fn lock(&self) -> Locked<'_> {
        self.shared.lock()
    }

    pub(crate) fn settle(&self, st: Locked<'_>) {
        self.shared.settle(st);
    }

    /// Footprint of the group's regions (segments held plus handle tables
    /// and slot lists) plus the bytes held by
    /// [`pin_on_leave`](Self::pin_on_leave)'s pins.
    pub fn real_usage(&self) -> usize {
        self.lock().real_total()
    }

    /// Keeps `region`'s memory counted in real usage, against the real hard
    /// limit, after the region leaves the group: when it leaves, what it
    /// held moves into the returned pin in the same step (real usage does
    /// not change then), and stays until the pin releases it, piece by
    /// piece with [`RealPin::release`] or the rest when it is dropped.
    /// Unspooled usage and the soft limit do not count pinned bytes. A pin
    /// dropped before its region leaves holds nothing and changes nothing.
    ///
    /// This is ScyllaDB's real-dirty pinning (`real_dirty_memory_accounter`,
    /// its fix of issue #1942): a flushed memtable whose data is being
    /// moved into a cache leaves the dirty-memory group but is not free
    /// yet; its memory stays held against the limit while it moves, and
    /// writers waiting at the real limit are let in as each piece is
    /// released rather than all at once at the end.
    ///
    /// ```
    /// use region_group::{ReclaimConfig, RegionGroup, RegionId, RegionListener};
    ///
    /// let group = RegionGroup::new("pins", ReclaimConfig::default());
    /// let memtable = RegionId::from_raw(1);
    /// group.add(memtable, 100);
    /// let mut pin = group.pin_on_leave(memtable)?;
    /// group.del(memtable, 100); // the region leaves: its bytes stay held
    /// assert_eq!((group.real_usage(), group.unspooled_usage()), (100, 0));
    /// assert_eq!(pin.release(30), 30);
    /// assert_eq!(group.real_usage(), 70);
    /// drop(pin);
    /// assert_eq!(group.real_usage(), 0);
    /// # Ok::<(), region_group::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::UnknownRegion`] if `region` does not report to the group.
    pub fn pin_on_leave(&self, region: RegionId) -> Result<RealPin, Error> {
        let mut st = self.lock();
        if st.regions.get(region).is_none() {
            return Err(Error::UnknownRegion {
                group: self.shared.name.clone(),
                region,
            });
        }
        let key = st.pins.insert(Pin {
            region: Some(region),
            bytes: 0,
        });
        Ok(RealPin {
            group: Arc::clone(&self.shared),
            key,
        })
    }

    /// Real usage minus bytes accounted as spooled (0 if that is negative,
    /// which happens when regions are removed before their spooled bytes
    /// are reverted).
    pub fn unspooled_usage(&self) -> usize {
        self.lock().unspooled()
    }

    /// Declares `bytes` of the group's memory written out (flush progress):
    /// unspooled usage falls by `bytes`, real usage is unchanged. May admit
    /// waiting writers and stop reclaiming.
    ///
    /// # Errors
    ///
    /// [`Error::SpooledExceedsUsage`] if the total spooled would exceed real
    /// usage; nothing changes then.
    pub fn account_spooled(&self, bytes: usize) -> Result<(), Error> {
        let mut st = self.lock();
        match st.spooled.checked_add(bytes) {
            Some(spooled) if spooled <= st.real => st.spooled = spooled,
            _ => {
                return Err(Error::SpooledExceedsUsage {
                    group: self.shared.name.clone(),
                    bytes,
                    spooled: st.spooled,
                    real: st.real,
                });
            }
        }
        self.settle(st);
        Ok(())
    }

    /// Takes back `bytes` previously accounted as spooled with
    /// [`account_spooled`](Self::account_spooled) (a failed or finished
    /// flush): unspooled usage rises by up to `bytes`.
    ///
    /// # Errors
    ///
    /// [`Error::RevertExceedsSpooled`] if fewer than `bytes` are spooled
    /// through `account_spooled` (bytes attributed to a region are reverted
    /// with [`revert_region_spooled`](Self::revert_region_spooled)); nothing
    /// changes then.
    pub fn revert_spooled(&self, bytes: usize) -> Result<(), Error> {
        let mut st = self.lock();
        let unattributed = st.spooled - st.attributed;
        if bytes > unattributed {
            return Err(Error::RevertExceedsSpooled {
                group: self.shared.name.clone(),
                bytes,
                spooled: unattributed,
            });
        }
        st.spooled -= bytes;
        st.note_peaks();
        self.settle(st);
        Ok(())
    }

    /// Declares `bytes` of `region` written out by its flush, like
    /// [`account_spooled`](Self::account_spooled) but attributed to the
    /// region, so the accounting can never outlive or outgrow it: when the
    /// region shrinks below its spooled bytes they are capped at its size,
    /// and when it leaves the group (dropped, unlistened, merged into a
    /// region of another group) its spooled bytes leave with it. (With
    /// `account_spooled`, a flushed memtable dropped before its bytes were
    /// reverted leaves them accounted, hiding as much of the other regions'
    /// memory from the limits until they are reverted.)
    ///
    /// # Errors
    ///
    /// * [`Error::UnknownRegion`] if `region` does not report to the group.
    /// * [`Error::RegionSpooledExceedsSize`] if the region's spooled bytes
    ///   would exceed its size.
    /// * [`Error::SpooledExceedsUsage`] if the group's spooled total would
    ///   exceed its real usage.
    ///
    /// Nothing changes on error.
    pub fn account_region_spooled(&self, region: RegionId, bytes: usize) -> Result<(), Error> {
        let mut st = self.lock();
        if st.spooled.checked_add(bytes).is_none_or(|s| s > st.real) {
            return Err(Error::SpooledExceedsUsage {
                group: self.shared.name.clone(),
                bytes,
                spooled: st.spooled,
                real: st.real,
            });
        }
        match st.regions.add_spooled(region, bytes) {
            None => {
                return Err(Error::UnknownRegion {
                    group: self.shared.name.clone(),
                    region,
                });
            }
            Some((size, spooled, false)) => {
                return Err(Error::RegionSpooledExceedsSize {
                    group: self.shared.name.clone(),
                    region,
                    bytes,
                    spooled,
                    size,
                });
            }
            Some((_, _, true)) => {}
        }
        st.spooled += bytes;
        st.attributed += bytes;
        self.settle(st);
        Ok(())
    }

    /// Takes back up to `bytes` of `region`'s spooled bytes (its flush
    /// failed, restarts, or finished) and returns how many were taken back:
    /// fewer than asked if the region shrank meanwhile, 0 if it left the
    /// group (its spooled bytes left with it). Unspooled usage rises by the
    /// returned amount.
    pub fn revert_region_spooled(&self, region: RegionId, bytes: usize) -> usize {
        let mut st = self.lock();
        let taken = st.regions.take_spooled(region, bytes);
        if taken > 0 {
            st.spooled -= taken;
            st.attributed -= taken;
            st.note_peaks();
            self.settle(st);
        }
        taken
    }

    /// Bytes of `region` accounted as spooled with
    /// [`account_region_spooled`](Self::account_region_spooled), or `None` if
    /// it does not report to this group.
    pub fn region_spooled(&self, region: RegionId) -> Option<usize> {
        self.lock().regions.get(region).map(|e| e.spooled)
    }

    /// Bytes currently accounted as spooled.
    pub fn spooled(&self) -> usize {
        self.lock().spooled
    }

    /// Replaces the three limits (a soft limit above the unspooled hard limit
    /// is lowered to it). Re-checks at once: may fire a reclaim callback and
    /// admit waiting writers.
    pub fn update_limits(&self, unspooled_hard: usize, unspooled_soft: usize, real_hard: usize) {
        let mut st = self.lock();
        st.limits = Limits::new(unspooled_hard, unspooled_soft, real_hard);
        self.settle(st);
    }

    /// The limits in effect.
    pub fn limits(&self) -> Limits {
        self.lock().limits
    }

    /// Whether usage is within every hard limit (usage equal to a limit is
    /// within it). This ignores the queue: a newcomer still waits behind
    /// queued requests.
    pub fn execution_permitted(&self) -> bool {
        self.lock().permitted()
    }

    /// Whether unspooled usage is above the soft limit (the state the last
    /// reclaim callback reported, or is about to report).
    pub fn is_reclaiming(&self) -> bool {
        self.lock().reclaiming
    }

    /// The largest region by segment total, counting grounded regions as
    /// size 0. It may return a grounded (or empty) region, but only when no
    /// region has a positive ordering size; use
    /// [`largest_flushable_region`](Self::largest_flushable_region) to never
    /// get one, or [`region_size`](Self::region_size) to check. Ties go to
    /// the higher id. O(log n) maintenance, O(1) query.
    pub fn largest_region(&self) -> Option<RegionId> {
        self.lock().regions.largest()
    }

    /// The largest region that is not grounded and holds at least one
    /// segment: the one worth flushing. `None` if there is none.
    pub fn largest_flushable_region(&self) -> Option<RegionId> {
        self.lock().regions.largest_flushable()
    }

    /// The segment total of `region` and whether it is grounded, or `None`
    /// if it does not report to this group.
    pub fn region_size(&self, region: RegionId) -> Option<(usize, bool)> {
        self.lock()
            .regions
            .get(region)
            .map(|e| (e.total, e.grounded))
    }

    /// Attaches `owner` to `region`: what the region's owner wants handed
    /// back with the region's id, such as a flush picked by
    /// [`largest_flushable_region`](Self::largest_flushable_region) getting
    /// the memtable and table it flushes. The owner is typed by the group
    /// (`RegionGroup<O>` holds owners of type `O`), kept in the region's
    /// entry beside its size, so no caller keeps a registry from ids back to
    /// owners or casts what it gets back. It stays attached while the
    /// region reports to the group, and is dropped when the region leaves
    /// (or is merged into another); attach something that does not keep
    /// the region alive (a `Weak`) to avoid a cycle. Returns false,
    /// dropping `owner`, if `region` does not report to this group.
    ///
    /// ```
    /// use logalloc::SegmentPool;
    /// use region_group::{ReclaimConfig, RegionGroup, SizeTrackedRegion};
    /// use std::sync::Arc;
    ///
    /// struct Table(&'static str);
    ///
    /// let pool = SegmentPool::new(Default::default())?;
    /// let group = RegionGroup::<Table>::with_owners("memtables", ReclaimConfig::default());
    /// let region = SizeTrackedRegion::new(&group, &pool);
    /// assert!(group.set_region_owner(region.id(), Arc::new(Table("t"))));
    /// assert_eq!(group.region_owner(region.id()).map(|t| t.0), Some("t"));
    /// let id = region.id();
    /// drop(region); // leaves the group, with its owner
    /// assert!(group.region_owner(id).is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_region_owner(&self, region: RegionId, owner: PlainArc<O>) -> bool {
        self.lock().regions.set_owner(region, Box::new(owner))
    }

    /// The owner attached to `region` with
    /// [`set_region_owner`](Self::set_region_owner), while it reports to
    /// this group.
    pub fn region_owner(&self, region: RegionId) -> Option<PlainArc<O>> {
        let st = self.lock();
        let owner = st.regions.owner(region)?;
        // Only `set_region_owner` stores owners, and only `PlainArc<O>`s.
        let owner = owner.downcast_ref::<PlainArc<O>>();
        debug_assert!(owner.is_some(), "a region's owner is the group's type");
        owner.cloned()
    }

    /// Number of regions reporting to this group.
    pub fn region_count(&self) -> usize {
        self.lock().regions.len()
    }

    /// Requests waiting in the queue now.
    pub fn queued_requests(&self) -> usize {
        self.lock().queue.len()
    }

    /// Shuts the group down: every queued request fails with
    /// [`Error::Shutdown`] and so does every later one. A request already
    /// admitted finishes normally. Usage accounting continues (regions may
    /// still be dropped). Idempotent.
    pub fn shutdown(&self) {
        let mut st = self.lock();
        st.shutdown = true;
        let mut wakes = Vec::with_capacity(st.queue.len());
        while let Some(key) = st.queue.pop_front() {
            let waited = st.waiters[key].queued_at.elapsed();
            st.blocked_time += waited;
            let waiter = &mut st.waiters[key];
            waiter.status = Status::Shutdown;
            wakes.extend(waiter.take_wake());
        }
        drop(st);
        self.shared.timer_cv.notify_one();
        for wake in wakes {
            wake.wake();
        }
    }

    /// Whether [`shutdown`](Self::shutdown) was called.
    pub fn is_shutdown(&self) -> bool {
        self.lock().shutdown
    }

    /// A snapshot of the group's counters.
    pub fn metrics(&self) -> GroupMetrics {
        let st = self.lock();
        GroupMetrics {
            real_usage: st.real_total(),
            unspooled_usage: st.unspooled(),
            spooled: st.spooled,
            peak_real_usage: st.peak_real,
            peak_unspooled_usage: st.peak_unspooled,
            queued_requests: st.queue.len(),
            blocked_requests_total: st.blocked_total,
            blocked_time_total: st.blocked_time,
            regions: st.regions.len(),
            reclaiming: st.reclaiming,
        }
    }

    /// Adds `delta` to real usage (and so to unspooled usage).
    fn grow(st: &mut State, delta: usize) {
        st.real = st.real.saturating_add(delta);
        st.note_peaks();
    }

    /// Removes `delta` from real usage (and so from unspooled usage).
    fn shrink(st: &mut State, delta: usize) {
        st.real = st.real.saturating_sub(delta);
    }

    /// Forgets `bytes` of spooled accounting attributed to a region that
    /// shrank below it or left the group.
    fn drop_attributed(st: &mut State, bytes: usize) {
        st.spooled -= bytes;
        st.attributed -= bytes;
    }
}

/// A region's memory kept in its group's real usage after the region left:
/// see [`RegionGroup::pin_on_leave`].
#[must_use = "dropping the pin releases its bytes at once"]
pub struct RealPin {
    group: Arc<Shared>,
    key: usize,
}

impl RealPin {
    /// The bytes still held (0 until the region left).
    pub fn bytes(&self) -> usize {
        self.group.lock().pins[self.key].bytes
    }

    /// Releases up to `bytes` (no more than are held) and returns how many
    /// were released. Writers waiting at the real hard limit may be
    /// admitted.
    pub fn release(&mut self, bytes: usize) -> usize {
        let mut st = self.group.lock();
        let pin = &mut st.pins[self.key];
        let bytes = bytes.min(pin.bytes);
        if bytes == 0 {
            return 0;
        }
        pin.bytes -= bytes;
        st.pinned -= bytes;
        self.group.settle(st);
        bytes
    }
}

impl fmt::Debug for RealPin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RealPin")
            .field("group", &self.group.name)
            .field("bytes", &self.bytes())
            .finish()
    }
}

impl Drop for RealPin {
    fn drop(&mut self) {
        let mut st = self.group.lock();
        let pin = st.pins.remove(self.key);
        st.pinned -= pin.bytes;
        self.group.settle(st);
    }
}

impl<O: ?Sized + Send + Sync + 'static> Drop for RegionGroup<O> {
    fn drop(&mut self) {
        // Stop the async-timeout thread, if one runs; it holds only `Shared`.
        self.shared.state.lock().timer.stop = true;
        self.shared.timer_cv.notify_one();
    }
}

/// The group's view of its regions. Each callback takes the group lock
/// briefly and never blocks otherwise; reclaim callbacks and wake-ups run
/// after the lock is released.
impl<O: ?Sized + Send + Sync + 'static> RegionListener for RegionGroup<O> {
    fn add(&self, region: RegionId, total: usize) {
        let mut st = self.lock();
        if let Some(old) = st.regions.insert(region, total) {
            Self::shrink(&mut st, old.total);
            Self::drop_attributed(&mut st, old.spooled);
        }
        Self::grow(&mut st, total);
        self.settle(st);
    }

    fn del(&self, region: RegionId, total: usize) {
        let mut st = self.lock();
        if let Some(old) = st.regions.remove(region) {
            Self::drop_attributed(&mut st, old.spooled);
        }
        Self::shrink(&mut st, total);
        // A pin waiting for this region takes what it held, in this step.
        let s = &mut *st;
        if let Some((_, pin)) = s.pins.iter_mut().find(|(_, p)| p.region == Some(region)) {
            pin.region = None;
            pin.bytes += total;
            s.pinned += total;
        }
        self.settle(st);
    }

    fn increase_usage(&self, region: RegionId, delta: usize) {
        let mut st = self.lock();
        st.regions.grow(region, delta);
        Self::grow(&mut st, delta);
        self.settle(st);
    }

    fn decrease_usage(&self, region: RegionId, delta: usize) {
        let mut st = self.lock();
        let capped = st.regions.shrink(region, delta);
        Self::drop_attributed(&mut st, capped);
        Self::shrink(&mut st, delta);
        self.settle(st);
    }

    fn merged(&self, into: RegionId, from: RegionId, moved: usize) {
        // The group's totals are unchanged; only the ordering moves.
        self.lock().regions.merge(into, from, moved);
    }

    fn ground_evictable(&self, region: RegionId) {
        self.lock().regions.ground(region);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::sync::plain::{AtomicUsize, OnceLock, Ordering, Weak};

    fn id(n: u64) -> RegionId {
        RegionId::from_raw(n)
    }

    #[test]
    fn listener_deltas_change_both_counters() {
        let g = RegionGroup::new("g", ReclaimConfig::default());
        g.add(id(1), 100);
        g.increase_usage(id(1), 50);
        g.account_spooled(30).unwrap();
        assert_eq!((g.real_usage(), g.unspooled_usage()), (150, 120));
        g.decrease_usage(id(1), 50);
        assert_eq!((g.real_usage(), g.unspooled_usage()), (100, 70));
        g.revert_spooled(30).unwrap();
        assert_eq!(g.unspooled_usage(), 100);
        g.del(id(1), 100);
        assert_eq!((g.real_usage(), g.region_count()), (0, 0));
        let m = g.metrics();
        assert_eq!((m.peak_real_usage, m.peak_unspooled_usage), (150, 150));
    }

    #[test]
    fn an_owner_stays_while_its_region_reports_and_leaves_with_it() {
        let g = RegionGroup::<u64>::with_owners("g", ReclaimConfig::default());
        let owned = PlainArc::new;
        let of = |r: u64| g.region_owner(id(r)).map(|o| *o);
        assert!(!g.set_region_owner(id(1), owned(10)), "not in the group");
        g.add(id(1), 100);
        g.add(id(2), 100);
        assert!(g.set_region_owner(id(1), owned(10)));
        assert!(g.set_region_owner(id(2), owned(20)));
        g.increase_usage(id(1), 50);
        g.ground_evictable(id(1));
        assert_eq!((of(1), of(2)), (Some(10), Some(20)));
        g.del(id(1), 150);
        assert_eq!(of(1), None);
        g.add(id(3), 10);
        g.merged(id(3), id(2), 100);
        assert_eq!(
            (of(2), of(3)),
            (None, None),
            "a merged-away region's owner goes"
        );
        // Owners may be trait objects.
        let g = RegionGroup::<dyn Fn() -> u64 + Send + Sync>::with_owners(
            "dyn",
            ReclaimConfig::default(),
        );
        g.add(id(1), 1);
        assert!(g.set_region_owner(id(1), PlainArc::new(|| 7)));
        assert_eq!(g.region_owner(id(1)).map(|f| f()), Some(7));
    }

    #[test]
    fn bad_spool_accounting_is_rejected_without_change() {
        let g = RegionGroup::new("dirty", ReclaimConfig::default());
        g.add(id(1), 100);
        let err = g.account_spooled(101).unwrap_err();
        assert_eq!(
            err.to_string(),
            "region group `dirty`: cannot account 101 spooled bytes: 0 already spooled of 100 bytes of real usage"
        );
        assert!(matches!(
            g.account_spooled(usize::MAX),
            Err(Error::SpooledExceedsUsage { .. })
        ));
        g.account_spooled(60).unwrap();
        let err = g.revert_spooled(61).unwrap_err();
        assert_eq!(
            err.to_string(),
            "region group `dirty`: cannot revert 61 spooled bytes: only 60 are spooled"
        );
        assert_eq!((g.spooled(), g.unspooled_usage()), (60, 40));
    }

    #[test]
    fn soft_limit_defaults_to_hard_and_is_clamped() {
        let g = RegionGroup::new(
            "g",
            ReclaimConfig {
                unspooled_hard_limit: 10,
                ..Default::default()
            },
        );
        assert_eq!(
            g.limits(),
            Limits {
                unspooled_hard: 10,
                unspooled_soft: 10,
                real_hard: usize::MAX
            }
        );
        g.update_limits(5, 8, 20);
        assert_eq!(
            g.limits(),
            Limits {
                unspooled_hard: 5,
                unspooled_soft: 5,
                real_hard: 20
            }
        );
    }

    #[test]
    fn callback_calling_back_into_group_does_not_deadlock() {
        let calls = PlainArc::new(AtomicUsize::new(0));
        let cell: PlainArc<OnceLock<Weak<RegionGroup>>> = Default::default();
        let (c, w) = (calls.clone(), cell.clone());
        let g = RegionGroup::new(
            "g",
            ReclaimConfig {
                unspooled_soft_limit: 10,
                start_reclaiming: Some(PlainArc::new(move || {
                    c.fetch_add(1, Ordering::SeqCst);
                    // Calls back into the group: raises the soft limit, which
                    // records a stop crossing delivered by the same loop.
                    if let Some(g) = w.get().and_then(Weak::upgrade) {
                        assert!(g.is_reclaiming());
                        g.update_limits(usize::MAX, 1000, usize::MAX);
                    }
                })),
                ..Default::default()
            },
        );
        cell.set(PlainArc::downgrade(&g)).unwrap();
        g.add(id(1), 11);
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert!(!g.is_reclaiming());
    }

    #[test]
    fn real_hard_limit_blocks_independently_of_spooling() {
        let g = RegionGroup::new(
            "g",
            ReclaimConfig {
                real_hard_limit: 100,
                ..Default::default()
            },
        );
        g.add(id(1), 101);
        g.account_spooled(50).unwrap();
        assert!(!g.execution_permitted());
        g.decrease_usage(id(1), 1);
        assert!(g.execution_permitted());
    }
}
