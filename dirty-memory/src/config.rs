//! Configuration: the budget and its limits, the flush policy, the loop mode.

use std::time::Duration;

use crate::error::Error;

/// The smallest budget a manager accepts: every limit must be at least one byte.
pub const MIN_BUDGET: usize = 4;

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
    /// is flushed at about 11% of the dirty budget, four flushes at once.
    pub const fn per_memtable_default() -> Self {
        FlushPolicy::PerMemtableLimit {
            max_memtable_fraction: 0.11,
            max_concurrent_flushes: 4,
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

    /// How many flushes may be writing data at once under this policy.
    pub(crate) fn max_data_writers(&self) -> usize {
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
    /// The soft limit as a fraction of the budget, in `(0, 0.5]`; default 0.25.
    pub soft_limit_ratio: f64,
    /// The flush policy (can be changed at run time).
    pub policy: FlushPolicy,
    /// How many flushes may be in flight at once, counting those that have
    /// written their data and are finishing their tail work; default 20.
    pub max_flushes_in_flight: usize,
    /// How long the loop backs off when it is under pressure but nothing can
    /// be flushed (every region grounded or already flushing); default 1 ms.
    /// Must not be zero (the loop would spin).
    pub idle_backoff: Duration,
    /// The first retry delay after a failed flush; doubles up to
    /// `retry_backoff_max`. Default 100 ms.
    pub retry_backoff_min: Duration,
    /// The longest retry delay; default 10 s.
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
            soft_limit_ratio: 0.25,
            policy: FlushPolicy::LargestAtSoftLimit,
            max_flushes_in_flight: 20,
            idle_backoff: Duration::from_millis(1),
            retry_backoff_min: Duration::from_millis(100),
            retry_backoff_max: Duration::from_secs(10),
            loop_mode: LoopMode::BackgroundThread,
        }
    }

    /// The preset for system tables (ScyllaDB's numbers): its own 10 MiB
    /// budget, hard limit 5 MiB, soft limit 3 MiB, so that user writes held at
    /// the user manager's hard limit never hold system writes.
    pub fn system_tables() -> Self {
        DirtyMemoryConfig {
            soft_limit_ratio: 0.3,
            ..DirtyMemoryConfig::new("system", 10 << 20)
        }
    }

    /// Checks every setting.
    pub fn validate(&self) -> Result<(), Error> {
        Limits::for_budget(self.budget, self.soft_limit_ratio)?;
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

/// The byte limits derived from a budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The budget; also the real hard limit.
    pub budget: usize,
    /// Unspooled usage above this makes the loop flush (default policy).
    pub soft: usize,
    /// Unspooled usage above this holds writers: half the budget.
    pub hard: usize,
}

impl Limits {
    /// Derives the limits from a budget and a soft-limit ratio.
    pub fn for_budget(budget: usize, soft_limit_ratio: f64) -> Result<Limits, Error> {
        if budget < MIN_BUDGET {
            return Err(Error::BudgetTooSmall {
                budget,
                min: MIN_BUDGET,
            });
        }
        if !(soft_limit_ratio > 0.0 && soft_limit_ratio <= 0.5) {
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
            budget,
            soft: soft.clamp(1, hard),
            hard,
        })
    }

    /// The per-memtable policy's size threshold for this budget.
    pub(crate) fn max_memtable_size(&self, fraction: f64) -> usize {
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss,
            reason = "fraction is in (0, 1], so the product is in [0, budget]"
        )]
        let size = ((self.budget as f64) * fraction) as usize;
        size.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_limits_are_quarter_half_and_whole_budget() {
        let l = Limits::for_budget(1000, 0.25).unwrap();
        assert_eq!((l.soft, l.hard, l.budget), (250, 500, 1000));
    }

    #[test]
    fn bad_ratios_and_budgets_are_rejected() {
        for ratio in [0.0, -0.1, 0.51, f64::NAN] {
            assert!(matches!(
                Limits::for_budget(1000, ratio),
                Err(Error::InvalidSoftLimitRatio { .. })
            ));
        }
        let err = Limits::for_budget(3, 0.25).unwrap_err();
        assert_eq!(
            err.to_string(),
            "dirty-memory budget of 3 bytes is below the 4-byte minimum"
        );
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
        let l = Limits::for_budget(c.budget, c.soft_limit_ratio).unwrap();
        assert_eq!(l.hard, 5 << 20);
        assert_eq!(l.budget, 10 << 20);
        assert_eq!(l.soft, (10usize << 20) * 3 / 10);
    }
}
