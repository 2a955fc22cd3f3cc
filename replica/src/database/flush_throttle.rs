//! Flushes wait for compaction when a table's sorted runs pile up, so
//! that compaction keeps up under any sustained write rate (RocksDB's
//! L0 slowdown and stop triggers, with compaction's own progress as the
//! clock instead of a delay).
//!
//! The writers' only way into a table is its memtable, and a memtable's
//! memory comes back only by a flush; so holding a flush back holds the
//! writers back, through the dirty-memory limits they already wait at
//! (FIFO, released as a flush writes). What a flush waits for:
//!
//! * below [`FlushThrottleConfig::slowdown_runs`] runs: nothing;
//! * from there to [`FlushThrottleConfig::stop_runs`]: one compaction step
//!   (a job, or an incremental job's checkpoint) finished since the last
//!   flush that went through, so flushes go no faster than compaction
//!   retires runs, and the more runs, the closer to a stop;
//! * at `stop_runs` and above: until compaction brings the count below it.
//!
//! A flush waits only while compaction has work queued or running for the
//! table: when the strategy finds nothing to do (or the table is being
//! dropped, or the database closed), nothing would lower the count, and the
//! flush goes. Runs count as a read does: every flushed sstable is one, an
//! incremental run of many fragments is one.

use std::time::{Duration, Instant};

use crate::sync::{AtomicU64, Condvar, Mutex, Ordering};

/// When flushes wait for compaction
/// ([`CompactionConfig::flush_throttle`](crate::CompactionConfig::flush_throttle)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlushThrottleConfig {
    /// From this many sorted runs in a table, each flush waits for one
    /// compaction step (0: never).
    pub slowdown_runs: usize,
    /// From this many, a flush waits until compaction brings the count
    /// below it (0: never).
    pub stop_runs: usize,
}

impl Default for FlushThrottleConfig {
    /// Off: a held flush waits for a whole compaction step, and with one
    /// compaction worker a size-tiered job of gigabytes holds the writers
    /// for seconds (10 minutes of 1 KiB writes into a 16 MiB budget: 19
    /// sstables instead of hundreds, but 131 s without a write done, the
    /// longest 13.8 s; BENCHMARKS.md). Turn it on where a bounded read
    /// amplification matters more than such stalls
    /// ([`SUGGESTED`](Self::SUGGESTED)).
    fn default() -> Self {
        Self::OFF
    }
}

impl FlushThrottleConfig {
    /// Slow down from 20 runs, stop at 28 (a size-tiered table of a few
    /// GiB flushed in 64 MiB steps keeps well under 20 when compaction
    /// keeps up).
    pub const SUGGESTED: FlushThrottleConfig = FlushThrottleConfig {
        slowdown_runs: 20,
        stop_runs: 28,
    };

    /// No throttle.
    pub const OFF: FlushThrottleConfig = FlushThrottleConfig {
        slowdown_runs: 0,
        stop_runs: 0,
    };

    /// Whether `slowdown_runs` does not exceed `stop_runs` (where both
    /// are set).
    pub(crate) fn is_valid(&self) -> bool {
        self.slowdown_runs == 0 || self.stop_runs == 0 || self.slowdown_runs <= self.stop_runs
    }
}

#[derive(Debug, Default)]
struct State {
    /// Compaction checks queued or running for the table.
    busy: usize,
    /// Compaction steps finished.
    steps: u64,
    /// `steps` when the last throttled flush went through.
    passed_at: u64,
}

/// One table's throttle: what its compactions report and its flushes
/// wait on.
#[derive(Debug, Default)]
pub(crate) struct FlushThrottle {
    config: FlushThrottleConfig,
    state: Mutex<State>,
    changed: Condvar,
    /// Flushes that waited, and for how long in all.
    throttled: AtomicU64,
    waited_nanos: AtomicU64,
}

impl FlushThrottle {
    pub(crate) fn new(config: FlushThrottleConfig) -> Self {
        FlushThrottle {
            config,
            ..FlushThrottle::default()
        }
    }

    /// A compaction check of the table was queued.
    pub(crate) fn check_queued(&self) {
        self.state.lock().busy += 1;
    }

    /// A compaction check of the table ended (ran its jobs, found none,
    /// or was dropped).
    pub(crate) fn check_ended(&self) {
        let mut s = self.state.lock();
        s.busy = s.busy.saturating_sub(1);
        if s.busy == 0 {
            self.changed.notify_all();
        }
    }

    /// A compaction step of the table swapped its outputs in.
    pub(crate) fn step_done(&self) {
        self.state.lock().steps += 1;
        self.changed.notify_all();
    }

    /// Waits, as the [module docs](self) say, with `runs` counting the
    /// table's sorted runs now, calling `held` (with no lock held) once
    /// before it waits; returns how long it waited.
    pub(crate) fn wait(&self, runs: impl Fn() -> usize, held: impl FnOnce()) -> Duration {
        let FlushThrottleConfig {
            slowdown_runs,
            stop_runs,
        } = self.config;
        let over = |n: usize, limit: usize| limit > 0 && n >= limit;
        let start = Instant::now();
        let mut held = Some(held);
        let mut s = self.state.lock();
        loop {
            let n = runs();
            let stop = over(n, stop_runs);
            let slow = over(n, slowdown_runs);
            if s.busy == 0 || !(stop || slow) {
                break;
            }
            if !stop && s.steps != s.passed_at {
                s.passed_at = s.steps;
                break;
            }
            if let Some(held) = held.take() {
                // Told before the first wait, then looked at afresh.
                drop(s);
                held();
                s = self.state.lock();
                continue;
            }
            self.changed.wait(&mut s);
        }
        drop(s);
        if held.is_some() {
            return Duration::ZERO;
        }
        let elapsed = start.elapsed();
        self.throttled.fetch_add(1, Ordering::Relaxed);
        self.waited_nanos.fetch_add(
            u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        elapsed
    }

    /// Flushes that waited, and their wait in all.
    pub(crate) fn figures(&self) -> (u64, Duration) {
        (
            self.throttled.load(Ordering::Relaxed),
            Duration::from_nanos(self.waited_nanos.load(Ordering::Relaxed)),
        )
    }
}
