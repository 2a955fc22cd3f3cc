//! The crate's error type.

use std::error::Error as StdError;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

use crate::job::JobKey;
use crate::sync::PlainArc;

/// Everything that can go wrong in `flush-scheduler`, from configuration
/// through a job's own failure to shutdown.
///
/// The type is `Clone` (sources are shared through `Arc`) because every
/// [`FlushHandle`](crate::FlushHandle) of a coalesced flush sees the same
/// result.
///
/// Jobs report their own failures with [`FlushError::directory_failed`]
/// (the flush directory is at fault: it is skipped for a while) or
/// [`FlushError::job_failed`] (anything else). A job that returns any other
/// variant is treated like [`FlushError::JobFailed`].
#[non_exhaustive]
#[derive(Debug, Clone, thiserror::Error)]
pub enum FlushError {
    /// The flush directory failed (full disk, I/O error, read-only mount).
    /// The scheduler skips the directory for its cooldown and retries the
    /// job elsewhere.
    #[error("flush directory {} failed: {source}", path.display())]
    DirectoryFailed {
        /// The directory that failed.
        path: PathBuf,
        /// The I/O error that showed it.
        #[source]
        source: PlainArc<io::Error>,
    },
    /// The job failed for a reason that is not the directory's fault.
    #[error("flush of {key} failed: {source}")]
    JobFailed {
        /// The job that failed.
        key: JobKey,
        /// Why it failed.
        #[source]
        source: PlainArc<dyn StdError + Send + Sync>,
    },
    /// The job failed `attempts` times, reaching
    /// [`RetryPolicy::max_attempts`](crate::RetryPolicy::max_attempts); the
    /// job object was kept (see
    /// [`FlushScheduler::take_abandoned`](crate::FlushScheduler::take_abandoned)).
    #[error(
        "flush of {key} gave up after {attempts} failed attempts (the limit); last error: {last}"
    )]
    GaveUp {
        /// The job that gave up.
        key: JobKey,
        /// How many attempts failed.
        attempts: u32,
        /// The error of the last attempt.
        #[source]
        last: Box<FlushError>,
    },
    /// The scheduler shut down before the job could complete; the job object
    /// was handed back by [`FlushScheduler::shutdown`](crate::FlushScheduler::shutdown).
    #[error("flush of {key} was cancelled by scheduler shutdown; its job was handed back")]
    Cancelled {
        /// The cancelled job.
        key: JobKey,
    },
    /// A job was submitted after shutdown began; it is handed back in
    /// [`Rejected`](crate::Rejected).
    #[error("flush of {key} was rejected: the scheduler is shut down")]
    ShutDown {
        /// The rejected job.
        key: JobKey,
    },
    /// The configuration names no flush directory.
    #[error("no flush directory configured: at least 1 is required")]
    NoDirectories,
    /// A configured flush directory is listed more than once.
    #[error("flush directory {} is listed more than once", path.display())]
    DuplicateDirectory {
        /// The repeated directory.
        path: PathBuf,
    },
    /// A configured flush directory cannot be inspected (usually: it does
    /// not exist).
    #[error("flush directory {} is not accessible: {source}", path.display())]
    DirectoryInaccessible {
        /// The directory.
        path: PathBuf,
        /// The error from inspecting it.
        #[source]
        source: PlainArc<io::Error>,
    },
    /// A configured flush directory exists but is not a directory.
    #[error("flush directory {} is not a directory", path.display())]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// A configured flush directory refused a probe file.
    #[error("flush directory {} is not writable: {source}", path.display())]
    DirectoryNotWritable {
        /// The directory.
        path: PathBuf,
        /// The error from creating the probe file.
        #[source]
        source: PlainArc<io::Error>,
    },
    /// The configured worker count is zero.
    #[error("worker count of 0 is below the minimum of 1")]
    NoWorkers,
    /// The retry backoff bounds are inconsistent.
    #[error(
        "initial retry backoff of {initial:?} must be non-zero and at most the maximum backoff of {max:?}"
    )]
    InvalidBackoff {
        /// The configured initial backoff.
        initial: Duration,
        /// The configured maximum backoff.
        max: Duration,
    },
    /// A worker thread could not be started.
    #[error("could not start flush worker thread {index}: {source}")]
    WorkerSpawn {
        /// Index of the worker that failed to start.
        index: usize,
        /// The error from the OS.
        #[source]
        source: PlainArc<io::Error>,
    },
}

impl FlushError {
    /// The error a job returns when its flush directory failed (so the
    /// scheduler skips that directory for a while).
    pub fn directory_failed(path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::DirectoryFailed {
            path: path.into(),
            source: PlainArc::new(source),
        }
    }

    /// The error a job returns when it failed for any other reason.
    pub fn job_failed(key: JobKey, source: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        Self::JobFailed {
            key,
            source: PlainArc::from(source.into()),
        }
    }

    /// Whether this error blames the flush directory.
    pub fn is_directory_failure(&self) -> bool {
        matches!(self, Self::DirectoryFailed { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_thing_and_the_limit() {
        let e = FlushError::job_failed(JobKey::new(7), "disk said no");
        assert_eq!(e.to_string(), "flush of memtable #7 failed: disk said no");
        let g = FlushError::GaveUp {
            key: JobKey::new(7),
            attempts: 3,
            last: Box::new(e),
        };
        assert!(g.to_string().contains("gave up after 3 failed attempts"));
        assert!(StdError::source(&g).is_some());
        let d = FlushError::directory_failed("/flush/a", io::Error::other("EIO"));
        assert!(d.is_directory_failure());
        assert_eq!(d.to_string(), "flush directory /flush/a failed: EIO");
    }
}
