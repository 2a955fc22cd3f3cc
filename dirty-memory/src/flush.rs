//! The interface between the manager and the memtables' owner.

use std::error::Error as StdError;
use std::fmt;

use region_group::RegionId;

use crate::error::Error;
use crate::manager::Inner;
use crate::sync::{Arc, PlainArc};

/// Why a flush was started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FlushReason {
    /// Memory pressure: the policy picked this memtable.
    Pressure,
    /// Someone asked for this memtable to be flushed
    /// ([`DirtyMemoryManager::request_flush`](crate::DirtyMemoryManager::request_flush)).
    Explicit,
    /// An earlier attempt failed; this is a retry.
    Retry,
}

/// The owner of the memtables: it seals and flushes a memtable when the
/// manager asks.
///
/// The manager knows memtables only by the [`RegionId`] of their region.
/// `start_flush` is called on the manager's flush thread (or the thread that
/// calls [`poll_flushes`](crate::DirtyMemoryManager::poll_flushes)) without any
/// manager lock held.
///
/// # Contract
///
/// * Before returning, the target seals the memtable (new writes go to a
///   fresh memtable) and grounds its region
///   ([`RegionListener::ground_evictable`](region_group::RegionListener::ground_evictable)),
///   so the policy does not pick it again. On a retry the memtable is already
///   sealed.
/// * The flush itself may run on any thread (with `flush-scheduler`: its
///   data phase on a data worker, its tail on a tail worker; see the crate
///   docs' wiring example). As it writes, it reports the memtable memory
///   written out with [`Flush::account_written`]; when the data is written
///   (before index, fsync and rename) it calls [`Flush::data_written`]; at
///   the end it calls [`Flush::finish`]/[`Flush::finish_releasing`],
///   [`Flush::fail`] or [`Flush::fail_permanently`]. Dropping the handle
///   without any of them is a transient failure.
/// * On failure the target keeps the memtable, and classifies the error.
///   A transient one (I/O: a full disk, a failed device) is reported with
///   [`Flush::fail`]: the manager retries the flush after a back-off
///   (doubling from [`DirtyMemoryConfig::retry_backoff_min`](crate::DirtyMemoryConfig::retry_backoff_min)
///   to `retry_backoff_max`), during which the failed flush holds no
///   data-write permit, with a new [`Flush`] (reason [`FlushReason::Retry`]).
///   A permanent one (data the sstable format cannot hold, a bug) is
///   reported with [`Flush::fail_permanently`]: the manager does not retry
///   it, and tells the target once, through
///   [`flush_failed_permanently`](Self::flush_failed_permanently). Only this
///   layer retries: an executor (such as `flush-scheduler`) must not retry a
///   job holding a `Flush`.
/// * An explicit request may name a memtable that has left the group since
///   it was made; the target then simply finishes the flush.
/// * A panic in `start_flush` is caught: the handle it dropped fails the
///   flush, which is retried after the back-off; the loop goes on.
/// * A target must not keep the manager alive (hold the group, not the
///   manager), and must not call
///   [`shutdown`](crate::DirtyMemoryManager::shutdown) from `start_flush`.
pub trait FlushTarget<S: ?Sized + Subject = ()>: Send + Sync {
    /// Seal the memtable of `flush.region()` (whose subject, if the region
    /// carries one, is [`flush.subject()`](Flush::subject)) and start
    /// flushing it.
    fn start_flush(&self, flush: Flush<S>);

    /// The flush of `region` failed permanently (`error` is
    /// [`Error::FlushFailedPermanently`]): the manager will not flush it
    /// again unless asked with
    /// [`request_flush`](crate::DirtyMemoryManager::request_flush). The
    /// memtable is still in memory, sealed and grounded, and its memory
    /// still counts against the budget; the owner decides what to do (alert
    /// an operator, drop the table, fix the cause and request a flush).
    ///
    /// Called once per permanent failure, on the thread that reported it,
    /// with no manager lock held.
    fn flush_failed_permanently(&self, region: RegionId, error: &Error);
}

/// What a memtable's region may carry for its flushes: anything shared
/// between threads (see [`DirtyMemoryManager`](crate::DirtyMemoryManager)'s
/// `S`). Implemented for every such type.
pub trait Subject: Send + Sync + 'static {}

impl<T: ?Sized + Send + Sync + 'static> Subject for T {}

/// One flush attempt of one memtable: the target reports progress and the
/// outcome through it.
///
/// While a flush holds the data-write permit (from its start until
/// [`data_written`](Self::data_written)), the default policy starts no other
/// flush. Bytes reported with [`account_written`](Self::account_written) are
/// accounted as *spooled*: they no longer count as unspooled dirty memory,
/// which releases writers held at the hard limit. A failed flush gives them
/// back.
pub struct Flush<S: ?Sized + Subject = ()> {
    inner: Arc<Inner<S>>,
    region: RegionId,
    /// What the region carries ([`Flush::subject`]), taken from the group
    /// when the flush is handed to the target.
    subject: Option<PlainArc<S>>,
    attempt: u32,
    reason: FlushReason,
    spooled: usize,
    written: u64,
    holds_data_permit: bool,
    done: bool,
}

impl<S: ?Sized + Subject> fmt::Debug for Flush<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Flush")
            .field("region", &self.region)
            .field("attempt", &self.attempt)
            .field("reason", &self.reason)
            .field("spooled", &self.spooled)
            .field("holds_data_permit", &self.holds_data_permit)
            .finish_non_exhaustive()
    }
}

impl<S: ?Sized + Subject> Flush<S> {
    pub(crate) fn new(
        inner: Arc<Inner<S>>,
        region: RegionId,
        attempt: u32,
        reason: FlushReason,
    ) -> Self {
        Flush {
            inner,
            region,
            subject: None,
            attempt,
            reason,
            spooled: 0,
            written: 0,
            holds_data_permit: true,
            done: false,
        }
    }

    /// The region of the memtable to flush.
    pub fn region(&self) -> RegionId {
        self.region
    }

    /// What the memtable's region carries
    /// ([`RegionGroup::set_region_owner`](region_group::RegionGroup::set_region_owner)
    /// on the manager's [`group`](crate::DirtyMemoryManager::group)): the
    /// memtable and its table, say, so that a flush carries what it
    /// flushes. `None` if the region carries nothing, or left the group (a
    /// memtable flushed or dropped since an explicit request).
    pub fn subject(&self) -> Option<&PlainArc<S>> {
        self.subject.as_ref()
    }

    /// Takes the subject from the group (without the manager's lock).
    pub(crate) fn load_subject(&mut self) {
        self.subject = self.inner.group().region_owner(self.region);
    }

    /// The manager's region group, through which a target (or a simulated
    /// memtable) can ground and remove the region.
    pub fn group(&self) -> &PlainArc<region_group::RegionGroup<S>> {
        self.inner.group_arc()
    }

    /// Which attempt this is: 1 for the first, more for retries.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Why this flush was started.
    pub fn reason(&self) -> FlushReason {
        self.reason
    }

    /// Bytes of this flush currently accounted as spooled. The group ties
    /// them to the region: they are capped at its size when the memtable
    /// shrinks, and leave the group with the region.
    pub fn spooled(&self) -> usize {
        self.spooled
            .min(self.inner.group().region_spooled(self.region).unwrap_or(0))
    }

    /// Whether this flush still holds the data-write permit.
    pub fn holds_data_permit(&self) -> bool {
        self.holds_data_permit
    }

    /// Reports that `bytes` more of the memtable were written out. They are
    /// accounted as spooled (unspooled dirty goes down, real does not),
    /// which can release writers held at the hard limit.
    ///
    /// # Unit: bytes of memtable (region) memory
    ///
    /// `bytes` counts the memtable's *memory*, in the unit of its region's
    /// size in the group (what the region's listener reports: segment
    /// bytes), never bytes written to disk. A flush stream converts as it
    /// goes:
    ///
    /// * if it knows the memory each piece of the memtable occupies (a
    ///   partition entry, a row and its cells), it reports that for each
    ///   piece it has written, as ScyllaDB's flush reader does; an
    ///   underestimate only releases writers a little later;
    /// * otherwise it converts encoded output proportionally: with the
    ///   region's size `S` at the start of the flush (from
    ///   [`group`](Self::group)`().region_size(region)`), and an estimate `E`
    ///   of the encoded size, after `e` encoded bytes the flush has covered
    ///   `S * e / E` bytes of memory, and it reports the increase since its
    ///   last call;
    /// * when the data phase ends, it may report `usize::MAX`: the rest of
    ///   the region is then spooled (the amount is capped below).
    ///
    /// The spooled total of a flush never exceeds its region's current size;
    /// the amount actually accounted is returned (0 if the region left the
    /// group, or if the group refuses because its spooled total would exceed
    /// its real usage).
    pub fn account_written(&mut self, bytes: usize) -> usize {
        self.spooled = self.spooled();
        let group = self.inner.group();
        let room = group
            .region_size(self.region)
            .map_or(0, |(size, _grounded)| size.saturating_sub(self.spooled));
        let accounted = bytes.min(room);
        // The region may shrink between the two calls: then the group
        // refuses and nothing is accounted.
        if accounted == 0
            || group
                .account_region_spooled(self.region, accounted)
                .is_err()
        {
            return 0;
        }
        self.spooled += accounted;
        self.written = self.written.saturating_add(accounted as u64);
        accounted
    }

    /// Gives back up to `bytes` of this flush's spooled accounting, for a
    /// memtable that shrank while it was being flushed; returns the amount
    /// given back.
    pub fn unaccount(&mut self, bytes: usize) -> usize {
        self.spooled = self.spooled();
        let reverted = self.revert(bytes.min(self.spooled));
        self.spooled -= reverted;
        reverted
    }

    /// Gives back up to `bytes` of the region's spooled accounting; returns
    /// what the group gave back (less if the region shrank or left).
    fn revert(&self, bytes: usize) -> usize {
        if bytes == 0 {
            return 0;
        }
        self.inner.group().revert_region_spooled(self.region, bytes)
    }

    /// Reports that the memtable's data is written: the data-write permit is
    /// released, so the next flush may start while this one does its tail
    /// work (index, fsync, hand-off). Idempotent.
    pub fn data_written(&mut self) {
        if self.holds_data_permit {
            self.holds_data_permit = false;
            self.inner.on_data_written(self.region);
        }
    }

    /// The flush succeeded. Its spooled accounting is given back (the
    /// memtable's memory is about to leave the group), the permit and the
    /// tail slot are released, and explicit waiters see `Ok`.
    ///
    /// If the memtable's region leaves the group right after this, prefer
    /// [`finish_releasing`](Self::finish_releasing), so the loop never sees
    /// the memtable counted again in between.
    pub fn finish(self) {
        self.finish_releasing(|| {});
    }

    /// Like [`finish`](Self::finish), but runs `release` (which drops the
    /// memtable's region, or merges it elsewhere) between giving back the
    /// spooled accounting and letting the flush loop look at usage again.
    ///
    /// If `release` panics, the flush still ends (as finished) before the
    /// panic propagates, so the flush loop and shutdown never wait for it.
    pub fn finish_releasing(mut self, release: impl FnOnce()) {
        /// Reports the flush finished when dropped, even by unwinding.
        struct Finished<'a, S: ?Sized + Subject>(&'a Flush<S>);
        impl<S: ?Sized + Subject> Drop for Finished<'_, S> {
            fn drop(&mut self) {
                self.0.inner.on_finished(self.0.region, self.0.written);
            }
        }
        self.done = true;
        self.inner.on_finish_begin();
        let spooled = std::mem::take(&mut self.spooled);
        self.revert(spooled);
        let finished = Finished(&self);
        release();
        drop(finished);
    }

    /// The flush failed transiently (I/O): its spooled accounting is given
    /// back, the memtable stays where it is, and the manager retries it
    /// after a back-off. Explicit waiters see [`Error::FlushFailed`].
    pub fn fail(mut self, error: impl Into<Box<dyn StdError + Send + Sync + 'static>>) {
        let source: Box<dyn StdError + Send + Sync + 'static> = error.into();
        let error = Error::FlushFailed {
            manager: self.inner.name().to_owned(),
            region: self.region,
            attempt: self.attempt,
            source: PlainArc::from(source),
        };
        self.fail_with(error);
    }

    /// The flush failed permanently (retrying cannot help: data the
    /// sstable format cannot hold, a bug): its spooled accounting is given
    /// back, the memtable stays where it is (sealed and grounded), and the
    /// manager does not retry it. The target hears of it once through
    /// [`FlushTarget::flush_failed_permanently`]; explicit waiters see
    /// [`Error::FlushFailedPermanently`].
    pub fn fail_permanently(mut self, error: impl Into<Box<dyn StdError + Send + Sync + 'static>>) {
        let source: Box<dyn StdError + Send + Sync + 'static> = error.into();
        let error = Error::FlushFailedPermanently {
            manager: self.inner.name().to_owned(),
            region: self.region,
            attempt: self.attempt,
            source: PlainArc::from(source),
        };
        self.fail_with(error);
    }

    fn fail_with(&mut self, error: Error) {
        self.done = true;
        let spooled = std::mem::take(&mut self.spooled);
        self.revert(spooled);
        self.inner.on_failed(self.region, self.attempt, error);
    }
}

impl<S: ?Sized + Subject> Drop for Flush<S> {
    fn drop(&mut self) {
        if !self.done {
            let error = Error::FlushAbandoned {
                manager: self.inner.name().to_owned(),
                region: self.region,
                attempt: self.attempt,
            };
            self.fail_with(error);
        }
    }
}
