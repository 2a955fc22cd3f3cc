//! The crate's error type.

/// Everything that can go wrong in a region group.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A request waited for memory longer than its timeout.
    #[error("region group `{group}`: timed out waiting for memory")]
    Timeout {
        /// The group's name.
        group: String,
    },
    /// The group was shut down before (or while) the request waited.
    #[error("region group `{group}` is shut down: request not run")]
    Shutdown {
        /// The group's name.
        group: String,
    },
    /// The helper thread that enforces async timeouts could not be started.
    #[error("region group `{group}`: cannot start the async timeout thread: {reason}")]
    TimerUnavailable {
        /// The group's name.
        group: String,
        /// Why the thread could not be spawned.
        reason: String,
    },
    /// `account_spooled` would declare more bytes spooled than the group holds.
    #[error(
        "region group `{group}`: cannot account {bytes} spooled bytes: {spooled} already spooled \
         of {real} bytes of real usage"
    )]
    SpooledExceedsUsage {
        /// The group's name.
        group: String,
        /// The bytes the caller tried to account.
        bytes: usize,
        /// Bytes already accounted as spooled.
        spooled: usize,
        /// The group's real usage.
        real: usize,
    },
    /// `revert_spooled` would revert more bytes than are accounted as spooled.
    #[error(
        "region group `{group}`: cannot revert {bytes} spooled bytes: only {spooled} are spooled"
    )]
    RevertExceedsSpooled {
        /// The group's name.
        group: String,
        /// The bytes the caller tried to revert.
        bytes: usize,
        /// Bytes currently accounted as spooled.
        spooled: usize,
    },
    /// `account_region_spooled` named a region that does not report to the
    /// group.
    #[error("region group `{group}`: {region} does not report to this group")]
    UnknownRegion {
        /// The group's name.
        group: String,
        /// The region named.
        region: logalloc::RegionId,
    },
    /// `account_region_spooled` would declare more of a region spooled than
    /// the region holds.
    #[error(
        "region group `{group}`: cannot account {bytes} spooled bytes of {region}: {spooled} \
         already spooled of its {size} bytes"
    )]
    RegionSpooledExceedsSize {
        /// The group's name.
        group: String,
        /// The region.
        region: logalloc::RegionId,
        /// The bytes the caller tried to account.
        bytes: usize,
        /// Bytes of the region already accounted as spooled.
        spooled: usize,
        /// The region's size (its footprint: segments, handle table and slot lists).
        size: usize,
    },
}
