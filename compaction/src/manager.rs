//! The compaction manager: runs jobs of many tables on its own workers,
//! within a bandwidth limit whose share grows with the backlog, and stops
//! promptly on close.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::job::{JobControl, JobOptions, JobReport, PendingTransaction, run_job};
use crate::pool::{Pool, Stop, Task};
use crate::purge::MaxPurgeable;
use crate::set::SstableSet;
use crate::strategy::{JobPlan, Strategy, invalid};
use crate::sync::{Arc, Condvar, Mutex, Ordering, PlainArc, PlainAtomicU64};

/// What the manager needs of a table. The replica implements it for each
/// table; `max_purgeable` (from [`MaxPurgeable`]) covers its memtables.
pub trait CompactionTable: MaxPurgeable {
    /// A name for thread names and messages.
    fn name(&self) -> String;

    /// The table's live sstable set (in its data directory).
    fn sstables(&self) -> &SstableSet;

    /// The table's strategy.
    fn strategy(&self) -> &dyn Strategy;

    /// Purge and output options for this table's jobs.
    fn job_options(&self) -> JobOptions;

    /// Told after each swap: `removed` left the set and `added` joined it.
    /// The removed sstables' files go once no reader holds them.
    fn replaced(&self, removed: &[u64], added: &[u64]) {
        let _ = (removed, added);
    }

    /// True once the table's jobs must stop (the table is being dropped):
    /// a running job stops at its next check as on close (inputs intact,
    /// partial outputs removed), polled at least every
    /// [`TABLE_STOP_POLL`] while the job waits for bandwidth.
    fn stopped(&self) -> bool {
        false
    }
}

/// How often a job that waits for bandwidth checks
/// [`CompactionTable::stopped`].
pub const TABLE_STOP_POLL: Duration = Duration::from_millis(50);

/// Maps the backlog to the share of the bandwidth limit compaction may
/// use, as ScyllaDB's compaction controller maps it to shares: a small
/// backlog gets a small, steady share (so compaction is a plateau, not a
/// burst that hurts flushes and reads); a growing backlog gets more, up to
/// all of it, so compaction never falls behind for good.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct BacklogController {
    /// Share with no backlog (default 0.1; in (0, 1]).
    pub min_share: f64,
    /// Share at or above `normalization_bytes` of backlog (default 1.0;
    /// `min_share` to 1).
    pub max_share: f64,
    /// Backlog at which the share reaches `max_share` (default 1 GiB).
    pub normalization_bytes: u64,
}

impl Default for BacklogController {
    fn default() -> Self {
        BacklogController {
            min_share: 0.1,
            max_share: 1.0,
            normalization_bytes: 1 << 30,
        }
    }
}

impl BacklogController {
    /// The share for `backlog` bytes: linear from `min_share` at 0 to
    /// `max_share` at `normalization_bytes`.
    pub fn share(&self, backlog: u64) -> f64 {
        let x = (backlog as f64 / self.normalization_bytes.max(1) as f64).min(1.0);
        self.min_share + (self.max_share - self.min_share) * x
    }

    fn validate(&self) -> Result<()> {
        if !(self.min_share > 0.0 && self.min_share <= 1.0) {
            return Err(invalid("min_share", self.min_share, "a share in (0, 1]"));
        }
        if !(self.max_share >= self.min_share && self.max_share <= 1.0) {
            return Err(invalid("max_share", self.max_share, "min_share to 1"));
        }
        if self.normalization_bytes == 0 {
            return Err(invalid("normalization_bytes", 0, "at least 1 byte"));
        }
        Ok(())
    }
}

/// Configuration of a [`CompactionManager`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ManagerConfig {
    /// Worker threads (default 1, for a 2-core machine; 1 to 64).
    pub workers: usize,
    /// Disk bandwidth limit of all compactions, bytes written per second
    /// (`None`, the default: unlimited).
    pub bandwidth: Option<u64>,
    /// How much of `bandwidth` compaction takes, by backlog.
    pub backlog: BacklogController,
    /// After a table's check fails (an I/O error, a full disk), it runs
    /// again by itself after this long, doubling with each failure in a
    /// row up to [`retry_backoff_max`](Self::retry_backoff_max), so a
    /// table whose compaction failed is compacted once the cause is gone
    /// even if no flush asks (default 1 s).
    pub retry_backoff_min: Duration,
    /// The longest wait between retries (default 60 s; at least
    /// `retry_backoff_min`).
    pub retry_backoff_max: Duration,
}

impl Default for ManagerConfig {
    fn default() -> Self {
        ManagerConfig {
            workers: 1,
            bandwidth: None,
            backlog: BacklogController::default(),
            retry_backoff_min: Duration::from_secs(1),
            retry_backoff_max: Duration::from_secs(60),
        }
    }
}

impl ManagerConfig {
    /// Checks every option.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] naming the first bad option.
    pub fn validate(&self) -> Result<()> {
        if !(1..=64).contains(&self.workers) {
            return Err(invalid("workers", self.workers, "1 to 64"));
        }
        if self.bandwidth == Some(0) {
            return Err(invalid(
                "bandwidth",
                0,
                "at least 1 byte per second, or unlimited",
            ));
        }
        if self.retry_backoff_min.is_zero() {
            return Err(invalid(
                "retry_backoff_min",
                format!("{:?}", self.retry_backoff_min),
                "more than 0",
            ));
        }
        if self.retry_backoff_max < self.retry_backoff_min {
            return Err(invalid(
                "retry_backoff_max",
                format!("{:?}", self.retry_backoff_max),
                "at least retry_backoff_min",
            ));
        }
        self.backlog.validate()
    }
}

/// A point-in-time copy of the manager's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompactionMetrics {
    /// Requests queued, not started.
    pub pending_jobs: u64,
    /// Requests running.
    pub running_jobs: u64,
    /// Jobs finished.
    pub jobs_completed: u64,
    /// Jobs that failed (inputs kept).
    pub jobs_failed: u64,
    /// Jobs stopped by close (inputs kept, partial outputs removed).
    pub jobs_stopped: u64,
    /// Bytes of input sstables compacted.
    pub bytes_read: u64,
    /// Bytes of output sstables written.
    pub bytes_written: u64,
    /// Largest temporary disk use of a job (bytes beyond its inputs).
    pub peak_temporary_bytes: u64,
    /// The backlog last computed (bytes still to compact).
    pub backlog_bytes: u64,
    /// The bandwidth compaction may use now, bytes per second (0:
    /// unlimited).
    pub allowed_rate: u64,
    /// Tombstones and expired cells dropped.
    pub purged: u64,
    /// Checks scheduled to run again after a failure
    /// ([`ManagerConfig::retry_backoff_min`]).
    pub retries_scheduled: u64,
    /// Of those, the ones still waiting for their time.
    pub retries_waiting: u64,
}

#[derive(Debug, Default)]
struct Counters {
    completed: PlainAtomicU64,
    failed: PlainAtomicU64,
    stopped: PlainAtomicU64,
    bytes_read: PlainAtomicU64,
    bytes_written: PlainAtomicU64,
    peak_temporary: PlainAtomicU64,
    backlog: PlainAtomicU64,
    rate: PlainAtomicU64,
    purged: PlainAtomicU64,
    retries: PlainAtomicU64,
}

struct Shared {
    config: ManagerConfig,
    counters: Counters,
    /// Generations being compacted, per table (by the set's address).
    busy: Mutex<HashSet<(usize, u64)>>,
    /// Tables with a check queued and not started.
    queued: Mutex<HashSet<usize>>,
    pending_txns: Mutex<Vec<PendingTransaction>>,
    /// Failures in a row, per table with a retry scheduled.
    failures: Mutex<HashMap<usize, u32>>,
    /// The pool's shared part, where a failed check queues its retry.
    pool: Arc<crate::pool::Shared>,
}

type Done = Arc<(Mutex<Option<Result<()>>>, Condvar)>;

struct CompactionTask {
    shared: Arc<Shared>,
    table: PlainArc<dyn CompactionTable>,
    /// `Some` for a major compaction, with where to report its result.
    major: Option<Done>,
}

fn table_id(table: &dyn CompactionTable) -> usize {
    std::ptr::from_ref(table.sstables()) as usize
}

struct Control<'a> {
    stop: &'a Stop,
    table: &'a dyn CompactionTable,
    rate: u64,
    next_allowed: Cell<Option<Instant>>,
}

impl JobControl for Control<'_> {
    fn should_stop(&self) -> bool {
        self.stop.is_set() || self.table.stopped()
    }

    fn wrote(&self, bytes: u64) {
        if self.rate == 0 || bytes == 0 {
            return;
        }
        let now = Instant::now();
        let start = self.next_allowed.get().map_or(now, |t| t.max(now));
        let next = start + Duration::from_secs_f64(bytes as f64 / self.rate as f64);
        self.next_allowed.set(Some(next));
        // In slices, so a table's stop is seen while waiting.
        let mut now = now;
        while next > now + Duration::from_millis(5) && !self.should_stop() {
            self.stop.wait_for((next - now).min(TABLE_STOP_POLL));
            now = Instant::now();
        }
    }
}

/// Unmarks a job's inputs as being compacted, also when the job panics.
struct Busy<'a> {
    shared: &'a Shared,
    id: usize,
    inputs: &'a [u64],
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        let mut busy = self.shared.busy.lock();
        for &g in self.inputs {
            busy.remove(&(self.id, g));
        }
    }
}

impl CompactionTask {
    fn plan(&self) -> Option<JobPlan> {
        let id = table_id(&*self.table);
        let mut busy = self.shared.busy.lock();
        let infos: Vec<_> = self
            .table
            .sstables()
            .snapshot()
            .infos()
            .into_iter()
            .filter(|i| !busy.contains(&(id, i.generation)))
            .collect();
        let strategy = self.table.strategy();
        let backlog = strategy.backlog(&infos);
        self.shared
            .counters
            .backlog
            .store(backlog, Ordering::Relaxed);
        let plan = match self.major {
            Some(_) => strategy.major_job(&infos),
            None => strategy.next_job(&infos),
        }?;
        for &g in &plan.inputs {
            busy.insert((id, g));
        }
        Some(plan)
    }

    fn rate(&self) -> u64 {
        let Some(limit) = self.shared.config.bandwidth else {
            return 0;
        };
        let backlog = self.shared.counters.backlog.load(Ordering::Relaxed);
        let rate = ((limit as f64) * self.shared.config.backlog.share(backlog)).max(1.0) as u64;
        self.shared.counters.rate.store(rate, Ordering::Relaxed);
        rate
    }

    fn run_one(&self, plan: &JobPlan, stop: &Stop) -> Result<JobReport> {
        let control = Control {
            stop,
            table: &*self.table,
            rate: self.rate(),
            next_allowed: Cell::new(None),
        };
        let options = self.table.job_options();
        let result = {
            let _busy = Busy {
                shared: &self.shared,
                id: table_id(&*self.table),
                inputs: &plan.inputs,
            };
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                run_job(
                    self.table.sstables(),
                    plan,
                    &options,
                    &*self.table,
                    &control,
                )
            }))
            .unwrap_or(Err(Error::Panicked))
        };
        let c = &self.shared.counters;
        match &result {
            Ok(report) => {
                c.completed.fetch_add(1, Ordering::Relaxed);
                c.bytes_read.fetch_add(report.bytes_read, Ordering::Relaxed);
                c.bytes_written
                    .fetch_add(report.bytes_written, Ordering::Relaxed);
                c.peak_temporary
                    .fetch_max(report.peak_temporary_bytes, Ordering::Relaxed);
                let p = report.purged;
                let purged = p.partition_tombstones
                    + p.range_tombstones
                    + p.row_tombstones
                    + p.cell_tombstones
                    + p.expired;
                c.purged.fetch_add(purged, Ordering::Relaxed);
                self.table.replaced(&report.inputs, &report.outputs);
            }
            Err(Error::Stopped) => {
                c.stopped.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => {
                c.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
        result
    }

    fn finish_pending(shared: &Shared, more: Option<PendingTransaction>) {
        let mut pending = shared.pending_txns.lock();
        pending.extend(more);
        let list = std::mem::take(&mut *pending);
        for txn in list {
            // An I/O error removing the file leaves it for `recover`.
            if let Ok(Some(txn)) = txn.try_finish() {
                pending.push(txn);
            }
        }
    }
}

impl CompactionTask {
    /// A check that failed (not stopped) runs again by itself after a
    /// back-off that doubles with each failure in a row; one that did not
    /// fail ends the table's run of failures.
    fn after_check(&self, outcome: &Result<()>, stop: &Stop) {
        let id = table_id(&*self.table);
        let failed = matches!(outcome, Err(e) if !matches!(e, Error::Stopped | Error::Closed));
        if !failed {
            self.shared.failures.lock().remove(&id);
            return;
        }
        if stop.is_set() || self.table.stopped() {
            return;
        }
        let config = &self.shared.config;
        let backoff = {
            let mut failures = self.shared.failures.lock();
            let n = failures.entry(id).or_insert(0);
            *n = n.saturating_add(1);
            config
                .retry_backoff_min
                .saturating_mul(1u32 << (*n - 1).min(20))
                .min(config.retry_backoff_max)
        };
        let retry = CompactionTask {
            shared: Arc::clone(&self.shared),
            table: PlainArc::clone(&self.table),
            major: None,
        };
        let due = crate::sync::time::deadline_after(crate::sync::time::now(), backoff);
        match crate::pool::submit_at(&self.shared.pool, due, Box::new(retry)) {
            Ok(()) => {
                self.shared.counters.retries.fetch_add(1, Ordering::Relaxed);
            }
            // Closing: the retry will never run.
            Err(task) => task.cancel(),
        }
    }
}

impl Task for CompactionTask {
    fn run(self: Box<Self>, stop: &Stop) {
        self.shared.queued.lock().remove(&table_id(&*self.table));
        let mut outcome = Ok(());
        while !stop.is_set() {
            let Some(plan) = self.plan() else { break };
            match self.run_one(&plan, stop) {
                Ok(mut report) => Self::finish_pending(&self.shared, report.pending.take()),
                Err(e) => {
                    outcome = Err(e);
                    break;
                }
            }
            if self.major.is_some() {
                break;
            }
        }
        if self.major.is_none() {
            self.after_check(&outcome, stop);
        }
        if let Some(done) = &self.major {
            let outcome = if stop.is_set() && outcome.is_ok() {
                Err(Error::Stopped)
            } else {
                outcome
            };
            *done.0.lock() = Some(outcome);
            done.1.notify_all();
        }
    }

    fn cancel(self: Box<Self>) {
        self.shared.queued.lock().remove(&table_id(&*self.table));
        if let Some(done) = &self.major {
            *done.0.lock() = Some(Err(Error::Closed));
            done.1.notify_all();
        }
    }
}

/// Runs the compactions of any number of tables on its own workers.
pub struct CompactionManager {
    shared: Arc<Shared>,
    pool: Pool,
}

impl fmt::Debug for CompactionManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompactionManager")
            .field("config", &self.shared.config)
            .field("metrics", &self.metrics())
            .finish_non_exhaustive()
    }
}

impl CompactionManager {
    /// Starts the workers.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] for a bad configuration, [`Error::Spawn`]
    /// when a thread cannot start.
    pub fn new(config: ManagerConfig) -> Result<Self> {
        config.validate()?;
        let pool = Pool::new(config.workers, "compaction")?;
        Ok(CompactionManager {
            shared: Arc::new(Shared {
                config,
                counters: Counters::default(),
                busy: Mutex::new(HashSet::new()),
                queued: Mutex::new(HashSet::new()),
                pending_txns: Mutex::new(Vec::new()),
                failures: Mutex::new(HashMap::new()),
                pool: pool.handle(),
            }),
            pool,
        })
    }

    /// Asks for `table` to be checked (after a flush added an sstable, at
    /// open): its strategy's jobs run until it has none. A check already
    /// queued for the table absorbs this one.
    ///
    /// # Errors
    /// [`Error::Closed`] after [`close`](Self::close).
    pub fn submit(&self, table: PlainArc<dyn CompactionTable>) -> Result<()> {
        if !self.shared.queued.lock().insert(table_id(&*table)) {
            return Ok(());
        }
        let task = CompactionTask {
            shared: Arc::clone(&self.shared),
            table,
            major: None,
        };
        self.pool.submit(Box::new(task)).map_err(|t| {
            t.cancel();
            Error::Closed
        })
    }

    /// A major compaction of `table`: every sstable not already being
    /// compacted goes into one job. Waits for it.
    ///
    /// # Errors
    /// [`Error::Closed`] or [`Error::Stopped`] when the manager closes
    /// first; the job's error otherwise.
    pub fn major(&self, table: PlainArc<dyn CompactionTable>) -> Result<()> {
        let done: Done = Arc::new((Mutex::new(None), Condvar::new()));
        let task = CompactionTask {
            shared: Arc::clone(&self.shared),
            table,
            major: Some(Arc::clone(&done)),
        };
        if self.pool.submit(Box::new(task)).is_err() {
            return Err(Error::Closed);
        }
        let mut slot = done.0.lock();
        loop {
            if let Some(result) = slot.take() {
                return result;
            }
            done.1.wait(&mut slot);
        }
    }

    /// The counters.
    pub fn metrics(&self) -> CompactionMetrics {
        let c = &self.shared.counters;
        let load = |a: &PlainAtomicU64| a.load(Ordering::Relaxed);
        CompactionMetrics {
            pending_jobs: self.pool.pending() as u64,
            running_jobs: self.pool.running() as u64,
            jobs_completed: load(&c.completed),
            jobs_failed: load(&c.failed),
            jobs_stopped: load(&c.stopped),
            bytes_read: load(&c.bytes_read),
            bytes_written: load(&c.bytes_written),
            peak_temporary_bytes: load(&c.peak_temporary),
            backlog_bytes: load(&c.backlog),
            allowed_rate: load(&c.rate),
            purged: load(&c.purged),
            retries_scheduled: load(&c.retries),
            retries_waiting: self.pool.delayed() as u64,
        }
    }

    /// Stops: running jobs stop at their next fragment (inputs intact,
    /// partial outputs removed), queued ones never start, workers are
    /// joined; then transaction files whose inputs are gone are removed.
    /// Idempotent.
    pub fn close(&self) {
        self.pool.close();
        CompactionTask::finish_pending(&self.shared, None);
    }
}

impl Drop for CompactionManager {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_grows_with_the_backlog_and_saturates() {
        let c = BacklogController::default();
        assert!((c.share(0) - 0.1).abs() < 1e-9);
        assert!(c.share(1 << 28) > c.share(1 << 20));
        assert!((c.share(1 << 30) - 1.0).abs() < 1e-9);
        assert!((c.share(u64::MAX) - 1.0).abs() < 1e-9);
    }

    /// A table with nothing to compact, stopped on request.
    struct Idle {
        set: SstableSet,
        stopped: crate::sync::AtomicBool,
    }

    impl MaxPurgeable for Idle {
        fn max_purgeable(&self, _key: &mutation::DecoratedKey) -> mutation::Timestamp {
            mutation::Timestamp::MAX
        }
    }

    impl CompactionTable for Idle {
        fn name(&self) -> String {
            "idle".to_owned()
        }
        fn sstables(&self) -> &SstableSet {
            &self.set
        }
        fn strategy(&self) -> &dyn Strategy {
            &crate::strategy::NoCompaction
        }
        fn job_options(&self) -> JobOptions {
            JobOptions::default()
        }
        fn stopped(&self) -> bool {
            self.stopped.load(Ordering::Acquire)
        }
    }

    fn idle() -> Idle {
        Idle {
            set: SstableSet::new(None),
            stopped: crate::sync::AtomicBool::new(false),
        }
    }

    #[test]
    fn a_stopped_table_ends_a_throttled_wait() {
        let stop = Stop::for_tests();
        let table = idle();
        let control = Control {
            stop: &stop,
            table: &table,
            rate: 1,
            next_allowed: Cell::new(None),
        };
        assert!(!control.should_stop());
        table.stopped.store(true, Ordering::Release);
        let t = Instant::now();
        // A second's worth at 1 B/s would be 11 days.
        control.wrote(1_000_000);
        assert!(t.elapsed() < Duration::from_secs(5));
        assert!(control.should_stop());
    }

    #[test]
    fn the_throttle_waits_for_the_rate_and_returns_on_stop() {
        // 1 MB/s: 100 KB must take about 100 ms (well, at least 50).
        let stop = Stop::for_tests();
        let table = idle();
        let control = Control {
            stop: &stop,
            table: &table,
            rate: 1_000_000,
            next_allowed: Cell::new(None),
        };
        let t = Instant::now();
        control.wrote(50_000);
        control.wrote(50_000);
        assert!(
            t.elapsed() >= Duration::from_millis(50),
            "{:?}",
            t.elapsed()
        );
        // Unlimited: no wait at all, and a stopped control returns at once.
        let free = Control {
            stop: &stop,
            table: &table,
            rate: 0,
            next_allowed: Cell::new(None),
        };
        free.wrote(u64::MAX);
        stop.request();
        let t = Instant::now();
        control.wrote(1_000_000_000);
        assert!(t.elapsed() < Duration::from_secs(5));
        assert!(control.should_stop());
    }
}
