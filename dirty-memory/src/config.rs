//! Configuration: the budget and its limits, the flush policy, the loop mode.

use std::time::Duration;

pub use region_group::Limits;

use crate::error::Error;

/// The smallest budget a manager accepts: every limit must be at least one byte.
pub const MIN_BUDGET: usize = 4;

/// The default soft limit, as a fraction of the budget: flushing starts when
/// unspooled dirty memory passes a quarter of the budget (half of the
/// unspooled hard limit), as ScyllaDB's issue-1817 policy describes it.
pub const DEFAULT_SOFT_LIMIT_RATIO: f64 = 0.25;

/// The largest soft-limit ratio: the soft limit may not pass the unspooled
/// hard limit, which is half the budget.
pub const MAX_SOFT_LIMIT_RATIO: f64 = 0.5;

/// The default bound on flushes in flight, data and tails together
/// (ScyllaDB's background flush serializer of 20 units).
pub const DEFAULT_MAX_FLUSHES_IN_FLIGHT: usize = 20;

/// The default back-off of the loop when it is under pressure but nothing
/// can be flushed (ScyllaDB's 1 ms, #3717).
pub const DEFAULT_IDLE_BACKOFF: Duration = Duration::from_millis(1);

/// The default first retry delay after a transient flush failure
/// (ScyllaDB retries flushes from 100 ms ...).
pub const DEFAULT_RETRY_BACKOFF_MIN: Duration = Duration::from_millis(100);

/// The default longest retry delay (... doubling up to 10 s).
pub const DEFAULT_RETRY_BACKOFF_MAX: Duration = Duration::from_secs(10);

/// The system tables' budget (ScyllaDB's 10 MiB).
pub const SYSTEM_TABLES_BUDGET: usize = 10 << 20;

/// The system tables' soft-limit ratio: 3 MiB of 10 MiB, ScyllaDB's numbers.
pub const SYSTEM_TABLES_SOFT_LIMIT_RATIO: f64 = 0.3;

/// Which memtables are flushed, and when.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[non_exhaustive]
pub enum FlushPolicy {
    /// The default (ScyllaDB since 2016): memtables stay in memory until the
    /// group's *unspooled* usage exceeds the soft limit; then the largest
    /// flushable memtable is flushed, and a new flush starts only when no
    /// other flush is still writing its data.
    #[default]
    LargestAtSoftLimit,
    /// The policy it replaced, kept for comparison: a memtable is flushed as
    /// soon as it alone reaches `max_memtable_fraction` of the budget, and up
    /// to `max_concurrent_flushes` flushes write data at once. As a safety
    /// net the largest flushable memtable is also flushed whenever writers
    /// are held at the hard limit, so many small memtables cannot livelock.
    PerMemtableLimit {
        /// A memtable reaching this fraction of the budget is flushed.
        max_memtable_fraction: f64,
        /// How many flushes may write data at the same time.
        max_concurrent_flushes: usize,
    },
}

impl FlushPolicy {
    /// The per-memtable policy with ScyllaDB's pre-2016 numbers: a memtable
    /// is flushed at about 11% of the dirty budget (#263), four flushes at
    /// once.
    pub const fn per_memtable_default() -> Self {
        /// ScyllaDB's `max_memtable_size` before 2016: about 11% of dirty memory.
        const PRE_2016_MEMTABLE_FRACTION: f64 = 0.11;
        /// Concurrent flushes of the comparison policy.
        const PRE_2016_CONCURRENT_FLUSHES: usize = 4;
        FlushPolicy::PerMemtableLimit {
            max_memtable_fraction: PRE_2016_MEMTABLE_FRACTION,
            max_concurrent_flushes: PRE_2016_CONCURRENT_FLUSHES,
        }
    }

    /// Checks the policy's parameters.
    pub fn validate(&self) -> Result<(), Error> {
        match *self {
            FlushPolicy::LargestAtSoftLimit => Ok(()),
            FlushPolicy::PerMemtableLimit {
                max_memtable_fraction,
                max_concurrent_flushes,
            } => {
                if !(max_memtable_fraction > 0.0 && max_memtable_fraction <= 1.0) {
                    return Err(Error::InvalidMemtableFraction {
                        fraction: max_memtable_fraction,
                    });
                }
                if max_concurrent_flushes == 0 {
                    return Err(Error::ZeroLimit {
                        what: "max_concurrent_flushes",
                    });
                }
                Ok(())
            }
        }
    }

    /// How many flushes may be writing data at once under this policy: one
    /// for [`LargestAtSoftLimit`](Self::LargestAtSoftLimit),
    /// `max_concurrent_flushes` for
    /// [`PerMemtableLimit`](Self::PerMemtableLimit) (an executor sizes its
    /// data workers by it).
    pub fn max_data_writers(&self) -> usize {
        match *self {
            FlushPolicy::LargestAtSoftLimit => 1,
            FlushPolicy::PerMemtableLimit {
                max_concurrent_flushes,
                ..
            } => max_concurrent_flushes,
        }
    }
}

/// Who runs the flush loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum LoopMode {
    /// One background thread per manager (the normal mode).
    #[default]
    BackgroundThread,
    /// No thread: the caller runs the loop's decisions with
    /// [`DirtyMemoryManager::poll_flushes`](crate::DirtyMemoryManager::poll_flushes).
    /// Used by deterministic simulations (simulated time) and tests.
    Manual,
}

/// How a [`DirtyMemoryManager`](crate::DirtyMemoryManager) is set up.
#[derive(Debug, Clone)]
pub struct DirtyMemoryConfig {
    /// Name used in errors, metrics and the flush thread's name.
    pub name: String,
    /// The dirty-memory budget in bytes: the real hard limit. The unspooled
    /// hard limit is half of it, the soft limit `soft_limit_ratio` of it.
    pub budget: usize,
    /// The soft limit as a fraction of the budget, in `(0, 0.5]`; default
    /// [`DEFAULT_SOFT_LIMIT_RATIO`].
    pub soft_limit_ratio: f64,
    /// The flush policy (can be changed at run time).
    pub policy: FlushPolicy,
    /// How many flushes may be in flight at once, counting those that have
    /// written their data and are finishing their tail work; default
    /// [`DEFAULT_MAX_FLUSHES_IN_FLIGHT`]. This bounds the memory of flushed
    /// memtables not yet released; it does not delay the data-write permit
    /// holder on an executor that reserves workers for data phases (such as
    /// `flush-scheduler`).
    pub max_flushes_in_flight: usize,
    /// How long the loop backs off when it is under pressure but nothing can
    /// be flushed (every region grounded or already flushing); default
    /// [`DEFAULT_IDLE_BACKOFF`]. Must not be zero (the loop would spin).
    pub idle_backoff: Duration,
    /// The first retry delay after a transient flush failure; doubles up to
    /// `retry_backoff_max`. Default [`DEFAULT_RETRY_BACKOFF_MIN`].
    pub retry_backoff_min: Duration,
    /// The longest retry delay; default [`DEFAULT_RETRY_BACKOFF_MAX`].
    pub retry_backoff_max: Duration,
    /// Who runs the flush loop.
    pub loop_mode: LoopMode,
}

impl DirtyMemoryConfig {
    /// A configuration for user tables with the given budget and the
    /// defaults above.
    pub fn new(name: impl Into<String>, budget: usize) -> Self {
        DirtyMemoryConfig {
            name: name.into(),
            budget,
            soft_limit_ratio: DEFAULT_SOFT_LIMIT_RATIO,
            policy: FlushPolicy::LargestAtSoftLimit,
            max_flushes_in_flight: DEFAULT_MAX_FLUSHES_IN_FLIGHT,
            idle_backoff: DEFAULT_IDLE_BACKOFF,
            retry_backoff_min: DEFAULT_RETRY_BACKOFF_MIN,
            retry_backoff_max: DEFAULT_RETRY_BACKOFF_MAX,
            loop_mode: LoopMode::BackgroundThread,
        }
    }

    /// The preset for system tables (ScyllaDB's numbers): its own 10 MiB
    /// budget, hard limit 5 MiB, soft limit 3 MiB, so that user writes held at
    /// the user manager's hard limit never hold system writes.
    pub fn system_tables() -> Self {
        DirtyMemoryConfig {
            soft_limit_ratio: SYSTEM_TABLES_SOFT_LIMIT_RATIO,
            ..DirtyMemoryConfig::new("system", SYSTEM_TABLES_BUDGET)
        }
    }

    /// Checks every setting.
    pub fn validate(&self) -> Result<(), Error> {
        limits_for_budget(self.budget, self.soft_limit_ratio)?;
        self.policy.validate()?;
        if self.max_flushes_in_flight == 0 {
            return Err(Error::ZeroLimit {
                what: "max_flushes_in_flight",
            });
        }
        if self.idle_backoff.is_zero() {
            return Err(Error::ZeroIdleBackoff);
        }
        if self.retry_backoff_min.is_zero() || self.retry_backoff_min > self.retry_backoff_max {
            return Err(Error::InvalidBackoff {
                min: self.retry_backoff_min,
                max: self.retry_backoff_max,
            });
        }
        Ok(())
    }
}

/// Derives a group's limits from a budget and a soft-limit ratio: the real
/// hard limit is the budget, the unspooled hard limit half of it, the
/// unspooled soft limit `soft_limit_ratio` of it (at least one byte).
pub fn limits_for_budget(budget: usize, soft_limit_ratio: f64) -> Result<Limits, Error> {
    if budget < MIN_BUDGET {
        return Err(Error::BudgetTooSmall {
            budget,
            min: MIN_BUDGET,
        });
    }
    if !(soft_limit_ratio > 0.0 && soft_limit_ratio <= MAX_SOFT_LIMIT_RATIO) {
        return Err(Error::InvalidSoftLimitRatio {
            ratio: soft_limit_ratio,
        });
    }
    let hard = budget / 2;
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "ratio is in (0, 0.5], so the product is in [0, budget/2]"
    )]
    let soft = ((budget as f64) * soft_limit_ratio) as usize;
    Ok(Limits {
        unspooled_hard: hard,
        unspooled_soft: soft.clamp(1, hard),
        real_hard: budget,
    })
}

/// The per-memtable policy's size threshold for a budget.
pub(crate) fn max_memtable_size(budget: usize, fraction: f64) -> usize {
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "fraction is in (0, 1], so the product is in [0, budget]"
    )]
    let size = ((budget as f64) * fraction) as usize;
    size.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_limits_are_quarter_half_and_whole_budget() {
        let l = limits_for_budget(1000, 0.25).unwrap();
        assert_eq!(
            (l.unspooled_soft, l.unspooled_hard, l.real_hard),
            (250, 500, 1000)
        );
    }

    #[test]
    fn bad_ratios_and_budgets_are_rejected() {
        for ratio in [0.0, -0.1, 0.51, f64::NAN] {
            assert!(matches!(
                limits_for_budget(1000, ratio),
                Err(Error::InvalidSoftLimitRatio { .. })
            ));
        }
        let err = limits_for_budget(3, 0.25).unwrap_err();
        assert_eq!(
            err.to_string(),
            "dirty-memory budget of 3 bytes is below the 4-byte minimum"
        );
    }

    #[test]
    fn a_policy_says_how_many_flushes_write_data_at_once() {
        assert_eq!(FlushPolicy::LargestAtSoftLimit.max_data_writers(), 1);
        assert_eq!(FlushPolicy::per_memtable_default().max_data_writers(), 4);
        let policy = FlushPolicy::PerMemtableLimit {
            max_memtable_fraction: 0.5,
            max_concurrent_flushes: 7,
        };
        assert_eq!(policy.max_data_writers(), 7);
    }

    #[test]
    fn bad_policies_and_counts_are_rejected() {
        let mut c = DirtyMemoryConfig::new("t", 1000);
        c.policy = FlushPolicy::PerMemtableLimit {
            max_memtable_fraction: 1.5,
            max_concurrent_flushes: 2,
        };
        assert!(matches!(
            c.validate(),
            Err(Error::InvalidMemtableFraction { .. })
        ));
        c.policy = FlushPolicy::PerMemtableLimit {
            max_memtable_fraction: 0.1,
            max_concurrent_flushes: 0,
        };
        assert_eq!(
            c.validate().unwrap_err().to_string(),
            "max_concurrent_flushes of 0 is invalid: at least 1 is needed"
        );
        c.policy = FlushPolicy::default();
        c.max_flushes_in_flight = 0;
        assert!(matches!(c.validate(), Err(Error::ZeroLimit { .. })));
        c.max_flushes_in_flight = 20;
        c.retry_backoff_min = Duration::from_secs(20);
        assert!(matches!(c.validate(), Err(Error::InvalidBackoff { .. })));
    }

    #[test]
    fn system_preset_matches_scylla() {
        let c = DirtyMemoryConfig::system_tables();
        let l = limits_for_budget(c.budget, c.soft_limit_ratio).unwrap();
        assert_eq!(l.unspooled_hard, 5 << 20);
        assert_eq!(l.real_hard, 10 << 20);
        assert_eq!(l.unspooled_soft, (10usize << 20) * 3 / 10);
    }
}
