//! What a flush job is: its key, the trait it implements, the context it
//! runs in and what it returns.

use std::cell::Cell;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::error::FlushError;
use crate::scheduler::Shared;

/// Identifies the memtable a flush job flushes. Two submissions with the
/// same key coalesce into one flush while the first is queued, running or
/// waiting to be retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobKey(u64);

impl JobKey {
    /// The key for memtable `id`.
    pub const fn new(id: u64) -> Self {
        Self(id)
    }

    /// The memtable id.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for JobKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "memtable #{}", self.0)
    }
}

/// A flush job: writes one memtable to a flush directory.
///
/// The scheduler owns the job object from submission until it succeeds, so
/// whatever the job holds (the sealed memtable) is never dropped before the
/// flush succeeded. A failed attempt is retried by calling [`run`] again on
/// the same object, possibly with another directory, so `run` must be
/// re-runnable: it must clean up or overwrite the partial output of an
/// earlier attempt and must not consume the memtable.
///
/// A job whose owner retries failed flushes itself (for example one that
/// carries a `dirty-memory` flush handle: that manager retries a failed
/// flush after a back-off, *without* holding the data-write permit
/// meanwhile, and re-acquires it first) opts out with
/// [`retry_on_failure`](FlushJob::retry_on_failure).
///
/// [`run`]: FlushJob::run
pub trait FlushJob: Send + 'static {
    /// The memtable this job flushes. Read once, at submission.
    fn key(&self) -> JobKey;

    /// Runs one attempt: writes the memtable under [`FlushContext::dir`],
    /// calling [`FlushContext::report_written`] as data is written. Returns
    /// [`FlushError::directory_failed`] if the directory is at fault and
    /// [`FlushError::job_failed`] for anything else.
    fn run(&mut self, ctx: &FlushContext<'_>) -> Result<FlushOutput, FlushError>;

    /// Whether the scheduler retries this job after a failed attempt;
    /// `true` by default. Asked after each failed attempt.
    ///
    /// When it returns `false`, the failed attempt ends the flush: its
    /// handles resolve with that attempt's error (a directory failure still
    /// puts the directory in cooldown, so the owner's own retry goes
    /// elsewhere) and the job object is dropped, outside the scheduler's
    /// lock. Use it when the owner retries by itself and keeps the memtable
    /// elsewhere, so that two layers never retry the same flush. (During
    /// [`shutdown`](crate::FlushScheduler::shutdown) a failed job is handed
    /// back as usual.)
    fn retry_on_failure(&self) -> bool {
        true
    }
}

/// What a job's attempt runs with: the directory chosen for it and a
/// progress reporter.
pub struct FlushContext<'a> {
    pub(crate) key: JobKey,
    pub(crate) dir: &'a Path,
    pub(crate) dir_index: usize,
    pub(crate) attempt: u32,
    pub(crate) written: Cell<u64>,
    pub(crate) shared: &'a Shared,
}

impl FlushContext<'_> {
    /// The job being run.
    pub fn key(&self) -> JobKey {
        self.key
    }

    /// The flush directory chosen for this attempt (round-robin over the
    /// healthy configured directories).
    pub fn dir(&self) -> &Path {
        self.dir
    }

    /// Which attempt this is, starting at 1.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Reports `bytes` more written by this attempt. The scheduler adds them
    /// to its metrics and forwards them to the configured
    /// [`ProgressListener`], which is how the caller accounts "virtual dirty"
    /// progress.
    pub fn report_written(&self, bytes: u64) {
        self.written.set(self.written.get().saturating_add(bytes));
        self.shared.record_written(self.key, self.dir_index, bytes);
    }

    /// Bytes reported so far by this attempt.
    pub fn written(&self) -> u64 {
        self.written.get()
    }
}

impl fmt::Debug for FlushContext<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FlushContext")
            .field("key", &self.key)
            .field("dir", &self.dir)
            .field("attempt", &self.attempt)
            .field("written", &self.written.get())
            .finish_non_exhaustive()
    }
}

/// What a successful attempt produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FlushOutput {
    /// Bytes the job wrote.
    pub bytes_written: u64,
    /// Files the job created (for instance the sstable's components).
    pub files: Vec<PathBuf>,
}

/// The result of a successful flush, as every handle of it sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlushReport {
    /// The job that succeeded.
    pub key: JobKey,
    /// The directory of the successful attempt.
    pub dir: PathBuf,
    /// How many attempts it took (1 if the first one succeeded).
    pub attempts: u32,
    /// What the job returned.
    pub output: FlushOutput,
}

/// Receives progress of every job, so the caller can account "virtual
/// dirty" memory: bytes written lower the memory still to be spooled, and
/// a failed attempt reverts them. Called on the worker thread, outside the
/// scheduler's lock; keep it short. A panic in `on_written` fails the
/// attempt (like a panic in the job); one in `on_attempt_failed` is caught
/// and the job goes on as if the listener had returned.
pub trait ProgressListener: Send + Sync {
    /// `bytes` more were written for `key` by its current attempt.
    fn on_written(&self, key: JobKey, bytes: u64);

    /// An attempt of `key` failed after writing `written` bytes, which the
    /// caller should account as unspooled again. The job will be retried
    /// unless it was cancelled or gave up.
    fn on_attempt_failed(&self, key: JobKey, written: u64, error: &FlushError);
}
