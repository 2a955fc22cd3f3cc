//! A snapshot of the scheduler's counters.

use std::path::PathBuf;

/// Counters of a [`FlushScheduler`](crate::FlushScheduler), as returned by
/// [`FlushScheduler::metrics`](crate::FlushScheduler::metrics).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FlushMetrics {
    /// Jobs waiting for a data worker.
    pub queued_data: usize,
    /// Jobs whose data is written, waiting for a tail worker.
    pub queued_tails: usize,
    /// Data phases running now (never more than the data workers).
    pub running_data: usize,
    /// Tail phases running now (never more than the tail workers).
    pub running_tails: usize,
    /// Jobs accepted.
    pub submitted: u64,
    /// Jobs whose two phases succeeded.
    pub completed: u64,
    /// Jobs completed with an error (panics included).
    pub failed: u64,
    /// Jobs whose phase panicked (also counted in `failed`).
    pub panicked: u64,
    /// Jobs handed back by shutdown.
    pub handed_back: u64,
    /// Per-directory usage, in configuration order.
    pub directories: Vec<DirectoryMetrics>,
}

/// Usage of one flush directory.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DirectoryMetrics {
    /// The directory.
    pub path: PathBuf,
    /// Jobs started in it.
    pub jobs: u64,
    /// Jobs that completed successfully in it.
    pub completed: u64,
    /// Jobs that failed because of it.
    pub failures: u64,
    /// Whether it is being skipped after a failure.
    pub cooling_down: bool,
}
