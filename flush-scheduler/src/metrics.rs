//! A snapshot of the scheduler's counters.

use std::path::PathBuf;

use crate::error::FlushError;

/// Counters of a [`FlushScheduler`](crate::FlushScheduler), as returned by
/// [`FlushScheduler::metrics`](crate::FlushScheduler::metrics).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct FlushMetrics {
    /// Jobs waiting for a worker.
    pub queued: usize,
    /// Jobs waiting for their retry backoff to end.
    pub backing_off: usize,
    /// Jobs running now (never more than the worker count).
    pub running: usize,
    /// Jobs accepted (not counting coalesced submissions).
    pub submitted: u64,
    /// Submissions that joined a job already queued, running or backing off.
    pub coalesced: u64,
    /// Jobs that succeeded.
    pub completed: u64,
    /// Attempts that failed (directory or job failures).
    pub failed_attempts: u64,
    /// Retries scheduled after a failed attempt.
    pub retries: u64,
    /// Jobs that reached `max_attempts` and gave up.
    pub gave_up: u64,
    /// Jobs cancelled by shutdown.
    pub cancelled: u64,
    /// Bytes reported by jobs, including attempts that later failed.
    pub bytes_written: u64,
    /// The error of the most recent failed attempt, if any.
    pub last_error: Option<FlushError>,
    /// Per-directory usage, in configuration order.
    pub directories: Vec<DirectoryMetrics>,
}

/// Usage of one flush directory.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DirectoryMetrics {
    /// The directory.
    pub path: PathBuf,
    /// Attempts started in it.
    pub attempts: u64,
    /// Attempts that succeeded in it.
    pub completed: u64,
    /// Attempts that failed because of it.
    pub failures: u64,
    /// Bytes reported written into it.
    pub bytes_written: u64,
    /// Whether it is being skipped after a failure.
    pub cooling_down: bool,
}
