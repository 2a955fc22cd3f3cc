//! The limits and callbacks a group is created with.

use std::fmt;

use crate::sync::PlainArc;

/// A reclaim callback: called with no group lock held (see [`ReclaimConfig`]).
pub type ReclaimCallback = PlainArc<dyn Fn() + Send + Sync>;

/// Limits and soft-limit callbacks of a [`RegionGroup`](crate::RegionGroup).
///
/// All limits are in bytes and inclusive: usage *equal* to a limit is within
/// it. `usize::MAX` means unlimited. A soft limit above the unspooled hard
/// limit is treated as equal to the hard limit, so the usual way to build a
/// config, `ReclaimConfig { unspooled_hard_limit: n, ..Default::default() }`,
/// gets a soft limit of `n`.
///
/// # Callbacks
///
/// `start_reclaiming` is called once each time unspooled usage rises above
/// the soft limit, `stop_reclaiming` once each time it falls back to or below
/// it. They are called in crossing order, one at a time, with no group lock
/// held, so they may call back into the group. They can run on whichever
/// thread changed the usage, including from inside a logalloc region
/// operation (a segment taken or freed), so they must be quick and must not
/// touch any logalloc region: signalling a flush thread is the intended use.
#[derive(Clone)]
pub struct ReclaimConfig {
    /// Writers wait while unspooled usage is above this.
    pub unspooled_hard_limit: usize,
    /// `start_reclaiming` fires when unspooled usage rises above this.
    pub unspooled_soft_limit: usize,
    /// Writers wait while real usage is above this.
    pub real_hard_limit: usize,
    /// Called on each rise of unspooled usage above the soft limit.
    pub start_reclaiming: Option<ReclaimCallback>,
    /// Called on each fall of unspooled usage back to or below the soft limit.
    pub stop_reclaiming: Option<ReclaimCallback>,
}

impl Default for ReclaimConfig {
    /// Unlimited: every limit is `usize::MAX`, no callbacks.
    fn default() -> Self {
        ReclaimConfig {
            unspooled_hard_limit: usize::MAX,
            unspooled_soft_limit: usize::MAX,
            real_hard_limit: usize::MAX,
            start_reclaiming: None,
            stop_reclaiming: None,
        }
    }
}

impl fmt::Debug for ReclaimConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReclaimConfig")
            .field("unspooled_hard_limit", &self.unspooled_hard_limit)
            .field("unspooled_soft_limit", &self.unspooled_soft_limit)
            .field("real_hard_limit", &self.real_hard_limit)
            .field("start_reclaiming", &self.start_reclaiming.is_some())
            .field("stop_reclaiming", &self.stop_reclaiming.is_some())
            .finish()
    }
}

/// The three limits in effect, as [`RegionGroup::limits`](crate::RegionGroup::limits) reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Writers wait while unspooled usage is above this.
    pub unspooled_hard: usize,
    /// Reclaiming is on while unspooled usage is above this (never above
    /// `unspooled_hard`).
    pub unspooled_soft: usize,
    /// Writers wait while real usage is above this.
    pub real_hard: usize,
}

impl Limits {
    /// The limits with the soft limit clamped to the unspooled hard limit.
    pub(crate) fn new(unspooled_hard: usize, unspooled_soft: usize, real_hard: usize) -> Self {
        Limits {
            unspooled_hard,
            unspooled_soft: unspooled_soft.min(unspooled_hard),
            real_hard,
        }
    }
}
