//! The error type of the crate.

use std::error::Error as StdError;
use std::time::Duration;

use region_group::RegionId;

use crate::sync::PlainArc;

/// The source of a failed flush, as the [`FlushTarget`](crate::FlushTarget)
/// reported it. Shared, so every waiter of a coalesced flush sees it.
pub type FlushFailure = PlainArc<dyn StdError + Send + Sync + 'static>;

/// Everything that can go wrong in `dirty-memory`.
///
/// Wrapped causes are [`source`](StdError::source)s, not part of the
/// message: print the chain to see them.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The budget cannot hold even one byte under every limit.
    #[error("dirty-memory budget of {budget} bytes is below the {min}-byte minimum")]
    BudgetTooSmall {
        /// The budget that was asked for.
        budget: usize,
        /// The smallest accepted budget.
        min: usize,
    },

    /// The soft-limit ratio is not in `(0, 0.5]`: the soft limit must be
    /// positive and not above the unspooled hard limit (half the budget).
    #[error("soft-limit ratio {ratio} is outside (0, 0.5] of the budget")]
    InvalidSoftLimitRatio {
        /// The ratio that was asked for.
        ratio: f64,
    },

    /// The per-memtable policy's size fraction is not in `(0, 1]`.
    #[error("max-memtable fraction {fraction} is outside (0, 1] of the budget")]
    InvalidMemtableFraction {
        /// The fraction that was asked for.
        fraction: f64,
    },

    /// A count that must be at least one was zero.
    #[error("{what} of 0 is invalid: at least 1 is needed")]
    ZeroLimit {
        /// Which setting was zero.
        what: &'static str,
    },

    /// The idle back-off is zero: the flush loop would spin while usage is
    /// above the soft limit and nothing can be flushed.
    #[error("idle_backoff of 0 is invalid: the flush loop would spin while nothing can be flushed")]
    ZeroIdleBackoff,

    /// The retry back-off bounds are reversed or zero.
    #[error("retry back-off from {min:?} to {max:?} is invalid: need 0 < min <= max")]
    InvalidBackoff {
        /// The first back-off.
        min: Duration,
        /// The longest back-off.
        max: Duration,
    },

    /// An explicit flush named a region that is not in the manager's group.
    #[error("{manager}: {region} is not in the dirty-memory group")]
    UnknownRegion {
        /// The manager's name.
        manager: String,
        /// The region that was asked for.
        region: RegionId,
    },

    /// The flush target reported a transient failure
    /// ([`Flush::fail`](crate::Flush::fail)). The manager keeps the memtable
    /// and retries the flush after a back-off.
    #[error("{manager}: flush of {region} failed on attempt {attempt}; it will be retried")]
    FlushFailed {
        /// The manager's name.
        manager: String,
        /// The region whose flush failed.
        region: RegionId,
        /// Which attempt failed (1 for the first).
        attempt: u32,
        /// What the target reported.
        #[source]
        source: FlushFailure,
    },

    /// The flush target reported a permanent failure
    /// ([`Flush::fail_permanently`](crate::Flush::fail_permanently)), such as
    /// data the sstable format cannot hold. The manager keeps the memtable
    /// (grounded, so the policy does not pick it again), reports the failure
    /// once to [`FlushTarget::flush_failed_permanently`](crate::FlushTarget::flush_failed_permanently),
    /// and does not retry it until an explicit request asks.
    #[error(
        "{manager}: flush of {region} failed permanently on attempt {attempt}; the memtable is kept and not retried"
    )]
    FlushFailedPermanently {
        /// The manager's name.
        manager: String,
        /// The region whose flush failed.
        region: RegionId,
        /// Which attempt failed (1 for the first).
        attempt: u32,
        /// What the target reported.
        #[source]
        source: FlushFailure,
    },

    /// A [`Flush`](crate::Flush) handle was dropped without `finish` or
    /// `fail`; this counts as a transient failure, and the flush is retried.
    #[error("{manager}: flush of {region} (attempt {attempt}) was dropped without finishing")]
    FlushAbandoned {
        /// The manager's name.
        manager: String,
        /// The region whose flush was abandoned.
        region: RegionId,
        /// Which attempt was abandoned.
        attempt: u32,
    },

    /// The region group did not admit a write (timeout or shutdown).
    #[error("{manager}: write not admitted")]
    Admission {
        /// The manager's name.
        manager: String,
        /// The region group's error.
        #[source]
        source: region_group::Error,
    },

    /// The manager was shut down before the request could run.
    #[error("{manager}: the dirty-memory manager is shut down")]
    ShutDown {
        /// The manager's name.
        manager: String,
    },

    /// [`poll_flushes`](crate::DirtyMemoryManager::poll_flushes) was called on
    /// a manager that runs its own flush thread.
    #[error(
        "{manager}: poll_flushes needs LoopMode::Manual, but this manager runs its own flush thread"
    )]
    NotManual {
        /// The manager's name.
        manager: String,
    },

    /// The flush thread could not be started.
    #[error("{manager}: could not start the flush thread")]
    Spawn {
        /// The manager's name.
        manager: String,
        /// The operating system's error.
        #[source]
        source: PlainArc<std::io::Error>,
    },
}

impl Error {
    /// Whether this is a flush failure the manager does not retry
    /// ([`Error::FlushFailedPermanently`]).
    pub fn is_permanent_flush_failure(&self) -> bool {
        matches!(self, Error::FlushFailedPermanently { .. })
    }
}
