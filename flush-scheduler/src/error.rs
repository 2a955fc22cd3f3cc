//! The crate's error type.

use std::error::Error as StdError;
use std::io;
use std::path::PathBuf;

use crate::job::Phase;
use crate::sync::PlainArc;

/// Everything that can go wrong in `flush-scheduler`: configuration, a
/// job's own failure, a panic in a job, shutdown.
///
/// Jobs report their failures with [`Error::directory_failed`] (the flush
/// directory is at fault: it is skipped for its cool-down) or
/// [`Error::job_failed`] (anything else). The scheduler never retries: it
/// hands the error to the job's [`FlushJob::complete`](crate::FlushJob::complete),
/// and the job's owner decides (with `dirty-memory`, the manager retries
/// transient failures with back-off).
///
/// Wrapped causes are [`source`](StdError::source)s, not part of the
/// message: print the chain to see them.
#[non_exhaustive]
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// The flush directory failed (full disk, I/O error, read-only mount).
    /// The scheduler skips the directory for its cool-down.
    #[error("flush directory {} failed", path.display())]
    DirectoryFailed {
        /// The directory that failed.
        path: PathBuf,
        /// The I/O error that showed it.
        #[source]
        source: PlainArc<io::Error>,
    },
    /// The job failed for a reason that is not the directory's fault.
    #[error("flush job failed in its {phase} phase")]
    JobFailed {
        /// The phase that failed; set by the scheduler.
        phase: Phase,
        /// Why it failed.
        #[source]
        source: PlainArc<dyn StdError + Send + Sync>,
    },
    /// The job panicked; the panic was caught and the worker lives on.
    #[error("flush job panicked in its {phase} phase: {message}")]
    Panicked {
        /// The phase that panicked.
        phase: Phase,
        /// The panic's message (or a note that it was not a string).
        message: String,
    },
    /// A job was submitted after shutdown began; it is handed back in
    /// [`Rejected`](crate::Rejected).
    #[error("flush job rejected: the flush scheduler is shut down")]
    ShutDown,
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
    #[error("flush directory {} is not accessible", path.display())]
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
    #[error("flush directory {} is not writable", path.display())]
    DirectoryNotWritable {
        /// The directory.
        path: PathBuf,
        /// The error from creating the probe file.
        #[source]
        source: PlainArc<io::Error>,
    },
    /// A worker count is zero.
    #[error("{what} of 0 is below the minimum of 1")]
    NoWorkers {
        /// Which count: `data_workers` or `tail_workers`.
        what: &'static str,
    },
    /// A worker thread could not be started.
    #[error("could not start flush worker thread {name}")]
    WorkerSpawn {
        /// The name of the worker that failed to start.
        name: String,
        /// The error from the OS.
        #[source]
        source: PlainArc<io::Error>,
    },
}

impl Error {
    /// The error a job returns when its flush directory failed (so the
    /// scheduler skips that directory for a while).
    pub fn directory_failed(path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::DirectoryFailed {
            path: path.into(),
            source: PlainArc::new(source),
        }
    }

    /// The error a job returns when it failed for any other reason. The
    /// scheduler fills in the phase.
    pub fn job_failed(source: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        Self::JobFailed {
            phase: Phase::Data,
            source: PlainArc::from(source.into()),
        }
    }

    /// Whether this error blames the flush directory.
    pub fn is_directory_failure(&self) -> bool {
        matches!(self, Self::DirectoryFailed { .. })
    }

    /// Records the phase a job's failure happened in.
    pub(crate) fn in_phase(mut self, in_phase: Phase) -> Self {
        if let Self::JobFailed { phase, .. } = &mut self {
            *phase = in_phase;
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_thing_and_causes_are_sources_not_text() {
        let e = Error::job_failed("disk said no").in_phase(Phase::Tail);
        assert_eq!(e.to_string(), "flush job failed in its tail phase");
        assert_eq!(
            StdError::source(&e).map(ToString::to_string).as_deref(),
            Some("disk said no")
        );
        let d = Error::directory_failed("/flush/a", io::Error::other("EIO"));
        assert!(d.is_directory_failure());
        assert_eq!(d.to_string(), "flush directory /flush/a failed");
        assert_eq!(
            StdError::source(&d).map(ToString::to_string).as_deref(),
            Some("EIO")
        );
    }
}
