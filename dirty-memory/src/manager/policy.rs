//! The flush policy: which memtable to flush, if any, and the retry
//! back-off.

use std::time::Duration;

use region_group::RegionId;

use crate::config::{FlushPolicy, Limits, max_memtable_size};
use crate::flush::Subject;

use super::Inner;

/// The most times the retry delay doubles: beyond 2^30 times the first
/// delay, `Duration` arithmetic saturates anyway, and the delay is capped
/// at `retry_backoff_max` long before.
const MAX_BACKOFF_DOUBLINGS: u32 = 30;

/// What the policy wants, read from the group without the state lock.
#[derive(Debug)]
pub(super) enum Decision {
    Flush(RegionId),
    NothingFlushable,
    NoPressure,
}

impl<S: ?Sized + Subject> Inner<S> {
    /// The largest region that can be flushed, with its size.
    pub(super) fn largest_flushable(&self) -> Option<(RegionId, usize)> {
        let region = self.group.largest_flushable_region()?;
        let (size, grounded) = self.group.region_size(region)?;
        (size > 0 && !grounded).then_some((region, size))
    }

    /// The back-off after the `failed_attempt`-th consecutive transient
    /// failure: `retry_backoff_min * 2^(failed_attempt - 1)`, capped at
    /// `retry_backoff_max` (ScyllaDB: 100 ms doubling to 10 s).
    pub(super) fn retry_delay(&self, failed_attempt: u32) -> Duration {
        let doublings = failed_attempt.saturating_sub(1).min(MAX_BACKOFF_DOUBLINGS);
        self.retry_backoff_min
            .saturating_mul(1u32 << doublings)
            .min(self.retry_backoff_max)
    }

    /// Reads the group (never under the state lock: the group calls back
    /// into it) and applies the policy.
    pub(super) fn decide(&self, policy: FlushPolicy, limits: Limits) -> Decision {
        let unspooled = self.group.unspooled_usage();
        let flushable = || self.largest_flushable();
        match policy {
            FlushPolicy::LargestAtSoftLimit => {
                if unspooled <= limits.unspooled_soft {
                    return Decision::NoPressure;
                }
                flushable().map_or(Decision::NothingFlushable, |(r, _)| Decision::Flush(r))
            }
            FlushPolicy::PerMemtableLimit {
                max_memtable_fraction,
                ..
            } => {
                let max = max_memtable_size(limits.real_hard, max_memtable_fraction);
                let writers_held =
                    unspooled > limits.unspooled_hard || self.group.real_usage() > limits.real_hard;
                match flushable() {
                    Some((r, size)) if size >= max || writers_held => Decision::Flush(r),
                    _ if writers_held => Decision::NothingFlushable,
                    _ => Decision::NoPressure,
                }
            }
        }
    }
}
