//! Where writes spend their time, phase by phase: the commit-log append,
//! the wait for dirty memory, and the apply to the memtable. A pause in
//! which no write completes shows up as one phase's maximum, so these
//! figures name a stall's cause from the outside.

use std::time::Duration;

use crate::sync::{AtomicU64, Ordering};

/// A write taking longer than this in one phase is counted as slow.
pub const SLOW_PHASE: Duration = Duration::from_millis(100);

/// One phase's figures, summed over writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WritePhase {
    /// Time spent in the phase, summed over writes.
    pub total: Duration,
    /// The longest single write's time in the phase.
    pub max: Duration,
    /// Writes that spent longer than [`SLOW_PHASE`] in it.
    pub slow: u64,
}

impl WritePhase {
    /// The figures of `self` and `other` together.
    #[must_use]
    pub fn sum(&self, other: &WritePhase) -> WritePhase {
        WritePhase {
            total: self.total + other.total,
            max: self.max.max(other.max),
            slow: self.slow + other.slow,
        }
    }
}

/// Where a table's (or a database's) writes spent their time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WritePhases {
    /// The commit-log append: encoding, copying into the log's buffers and
    /// every wait there (the buffer budget, a segment switch, the size
    /// limit, a lagging periodic sync) and, in batch mode, the wait for
    /// the fdatasync that covers the entry. Zero without a commit log.
    pub log_append: WritePhase,
    /// The wait for dirty memory (the hard limit), attempt by attempt.
    pub admission: WritePhase,
    /// The apply to the memtable once admitted: the memtable's lock and
    /// its allocation, reclaim of other regions' memory included.
    pub memtable_apply: WritePhase,
}

impl WritePhases {
    /// The figures of `self` and `other` together.
    #[must_use]
    pub fn sum(&self, other: &WritePhases) -> WritePhases {
        WritePhases {
            log_append: self.log_append.sum(&other.log_append),
            admission: self.admission.sum(&other.admission),
            memtable_apply: self.memtable_apply.sum(&other.memtable_apply),
        }
    }
}

/// The counters behind one [`WritePhase`].
#[derive(Debug, Default)]
pub(crate) struct PhaseCounter {
    total_nanos: AtomicU64,
    max_nanos: AtomicU64,
    slow: AtomicU64,
}

impl PhaseCounter {
    /// Counts one write's time `d` in the phase.
    pub(crate) fn record(&self, d: Duration) {
        let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.total_nanos.fetch_add(nanos, Ordering::Relaxed);
        self.max_nanos.fetch_max(nanos, Ordering::Relaxed);
        if d > SLOW_PHASE {
            self.slow.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn get(&self) -> WritePhase {
        WritePhase {
            total: Duration::from_nanos(self.total_nanos.load(Ordering::Relaxed)),
            max: Duration::from_nanos(self.max_nanos.load(Ordering::Relaxed)),
            slow: self.slow.load(Ordering::Relaxed),
        }
    }
}

/// The counters behind [`WritePhases`].
#[derive(Debug, Default)]
pub(crate) struct PhaseCounters {
    pub(crate) log_append: PhaseCounter,
    pub(crate) admission: PhaseCounter,
    pub(crate) memtable_apply: PhaseCounter,
}

impl PhaseCounters {
    pub(crate) fn get(&self) -> WritePhases {
        WritePhases {
            log_append: self.log_append.get(),
            admission: self.admission.get(),
            memtable_apply: self.memtable_apply.get(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phase_sums_its_writes_keeps_the_longest_and_counts_the_slow() {
        let c = PhaseCounters::default();
        c.log_append.record(Duration::from_millis(5));
        c.log_append.record(Duration::from_millis(250));
        c.log_append.record(SLOW_PHASE);
        c.admission.record(Duration::from_millis(101));
        let p = c.get();
        assert_eq!(
            p.log_append,
            WritePhase {
                total: Duration::from_millis(355),
                max: Duration::from_millis(250),
                slow: 1,
            }
        );
        assert_eq!(p.admission.slow, 1);
        assert_eq!(p.memtable_apply, WritePhase::default());
        let twice = p.sum(&p);
        assert_eq!(twice.log_append.total, Duration::from_millis(710));
        assert_eq!(twice.log_append.max, Duration::from_millis(250));
        assert_eq!(twice.log_append.slow, 2);
    }
}
