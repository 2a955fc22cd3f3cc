//! What a flush job is: the trait it implements, its two phases, the
//! context a phase runs in, and what shutdown hands back.

use std::fmt;
use std::path::Path;

use crate::error::Error;

/// The two phases of a flush job, each run on its own kind of worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Writing the memtable's data (the sstable's Data component). With
    /// `dirty-memory`, the flush holds the single data-write permit during
    /// this phase; it runs on a data worker, which never runs tails.
    Data,
    /// The work after the data is written: index and other components,
    /// fsync, the atomic rename, then the owner's
    /// [`publish`](FlushJob::publish). Runs on a tail worker.
    Tail,
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Phase::Data => "data",
            Phase::Tail => "tail",
        })
    }
}

/// A flush job: writes one memtable into a flush directory.
///
/// The scheduler runs [`write_data`](Self::write_data) on a data worker;
/// if it succeeds, the same job object moves to the tail queue and
/// [`write_tail`](Self::write_tail) runs on a tail worker, in the same
/// directory, followed there by [`publish`](Self::publish). Then
/// [`complete`](Self::complete) receives the outcome, once,
/// on that worker, with no scheduler lock held. The scheduler never retries
/// a job and never drops one unfinished: it is either completed or handed
/// back by [`shutdown`](crate::FlushScheduler::shutdown) (or, after shutdown,
/// by [`submit`](crate::FlushScheduler::submit) in [`Rejected`](crate::Rejected)).
///
/// A panic in a phase is caught and completes the job with
/// [`Error::Panicked`]; a panic in `complete` is caught too (the job is
/// dropped by the unwinding), so a worker never dies.
///
/// With `dirty-memory`, a job carries the manager's `Flush` handle: it calls
/// `Flush::account_written` while writing and `Flush::data_written` at the
/// end of `write_data`, and `finish`/`fail` in `complete`; the manager, not
/// the scheduler, decides on retries.
pub trait FlushJob: Send + 'static {
    /// Writes the memtable's data under [`FlushContext::dir`]. Returns
    /// [`Error::directory_failed`] if the directory is at fault and
    /// [`Error::job_failed`] for anything else.
    fn write_data(&mut self, ctx: &FlushContext<'_>) -> Result<(), Error>;

    /// The tail work after the data is written (index, fsync, rename), in
    /// the same directory. The default does nothing.
    fn write_tail(&mut self, ctx: &FlushContext<'_>) -> Result<(), Error> {
        let _ = ctx;
        Ok(())
    }

    /// The owner's hand-off of what the tail committed (the replica puts
    /// the flushed memtable's data into its row cache here), on the tail
    /// worker right after [`write_tail`](Self::write_tail) succeeded and
    /// before [`complete`](Self::complete): a named step of the flush, so
    /// that a long hand-off is not hidden in the step that ends it. Not run
    /// if an earlier phase failed. An error or a panic here completes the
    /// job with it, in [`Phase::Tail`]. The default does nothing.
    fn publish(&mut self, ctx: &FlushContext<'_>) -> Result<(), Error> {
        let _ = ctx;
        Ok(())
    }

    /// Receives the outcome: `Ok` once both phases (and
    /// [`publish`](Self::publish)) succeeded, or the error of the step that
    /// failed (no later step runs).
    fn complete(self: Box<Self>, outcome: Result<(), Error>);
}

/// What a phase runs with: the flush directory chosen for the job and the
/// phase.
#[derive(Debug)]
pub struct FlushContext<'a> {
    pub(crate) dir: &'a Path,
    pub(crate) phase: Phase,
}

impl FlushContext<'_> {
    /// The flush directory chosen for this job when its data phase started
    /// (round-robin over the directories not cooling down); the tail phase
    /// gets the same one.
    pub fn dir(&self) -> &Path {
        self.dir
    }

    /// The phase being run.
    pub fn phase(&self) -> Phase {
        self.phase
    }
}

/// A job [`shutdown`](crate::FlushScheduler::shutdown) hands back, with the
/// phase it was waiting to run.
pub struct HandedBack {
    /// The job, untouched since its last phase.
    pub job: Box<dyn FlushJob>,
    /// The phase it was waiting for: [`Phase::Data`] if nothing of it ran,
    /// [`Phase::Tail`] if its data is written and its tail is not.
    pub waiting_for: Phase,
}

impl fmt::Debug for HandedBack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandedBack")
            .field("waiting_for", &self.waiting_for)
            .finish_non_exhaustive()
    }
}
