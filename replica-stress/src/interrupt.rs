//! Stopping a run from outside: the program's signal handler (SIGINT,
//! SIGTERM) asks through an [`Interrupt`], the runner stops its clients
//! at the next interval and reports what ran, the populate phase stops
//! between writes, and the program closes the database and removes its
//! temporary directory. A second signal cannot wait for that: the handler
//! removes the temporary directories the [`Interrupt`] knows of itself and
//! exits.

use std::path::{Path, PathBuf};

use crate::sync::{Arc, AtomicBool, Mutex, Ordering};

/// A request to stop, shared by the program's signal handler and the run:
/// clones share one flag and one list of temporary directories.
#[derive(Debug, Clone, Default)]
pub struct Interrupt {
    inner: Arc<Inner>,
}

/// Two interrupts are equal when they are clones of one another (share
/// one request).
impl PartialEq for Interrupt {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

// A panic cannot leave an interrupt half-changed: its flag is one atomic
// and its list changes under its lock in one step (and the facade's lock
// does not poison), so a run that catches a panic may keep using it.
impl std::panic::RefUnwindSafe for Interrupt {}
impl std::panic::UnwindSafe for Interrupt {}

#[derive(Debug)]
struct Inner {
    requested: AtomicBool,
    temporary: Mutex<Vec<PathBuf>>,
}

impl Default for Inner {
    fn default() -> Self {
        Inner {
            requested: AtomicBool::new(false),
            temporary: Mutex::new(Vec::new()),
        }
    }
}

impl Interrupt {
    /// No stop requested yet, no temporary directory known.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the run to stop. Returns whether this is the first request.
    pub fn request(&self) -> bool {
        !self.inner.requested.swap(true, Ordering::Relaxed)
    }

    /// Whether a stop was requested.
    pub fn is_requested(&self) -> bool {
        self.inner.requested.load(Ordering::Relaxed)
    }

    /// Records `dir` as a temporary directory of the run, which
    /// [`remove_temporary_dirs`](Self::remove_temporary_dirs) removes.
    pub fn add_temporary_dir(&self, dir: &Path) {
        self.inner.temporary.lock().push(dir.to_path_buf());
    }

    /// Forgets `dir` (removed by its owner).
    pub fn forget_temporary_dir(&self, dir: &Path) {
        self.inner.temporary.lock().retain(|d| d != dir);
    }

    /// The temporary directories recorded and not forgotten.
    pub fn temporary_dirs(&self) -> Vec<PathBuf> {
        self.inner.temporary.lock().clone()
    }

    /// Removes every recorded temporary directory, for an exit that cannot
    /// wait for their owners; returns those it could not remove, with why.
    ///
    /// The database's threads may still be writing into a directory while
    /// it goes (a flush, the commit log): a file they create after the
    /// directory was listed fails its removal ("directory not empty"), so
    /// each directory is tried again, for up to two seconds, until it is
    /// gone; once their directories are gone those threads cannot create
    /// anything more.
    pub fn remove_temporary_dirs(&self) -> Vec<(PathBuf, std::io::Error)> {
        const PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);
        let dirs = std::mem::take(&mut *self.inner.temporary.lock());
        let deadline = std::time::Instant::now() + PATIENCE;
        dirs.into_iter()
            .filter_map(|d| {
                loop {
                    match std::fs::remove_dir_all(&d) {
                        Ok(()) => return None,
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
                        Err(e) if std::time::Instant::now() >= deadline => return Some((d, e)),
                        Err(_) => std::thread::sleep(std::time::Duration::from_millis(5)),
                    }
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_the_request_and_the_directories() {
        let a = Interrupt::new();
        let b = a.clone();
        assert!(!b.is_requested());
        assert!(a.request(), "the first request");
        assert!(!b.request(), "a second request");
        assert!(b.is_requested());

        let base = tempfile::tempdir().unwrap();
        let (kept, removed) = (base.path().join("kept"), base.path().join("removed"));
        for d in [&kept, &removed] {
            std::fs::create_dir_all(d.join("sub")).unwrap();
            a.add_temporary_dir(d);
        }
        b.forget_temporary_dir(&kept);
        assert_eq!(a.temporary_dirs(), std::slice::from_ref(&removed));
        assert!(b.remove_temporary_dirs().is_empty());
        assert!(kept.is_dir() && !removed.exists());
        assert!(a.temporary_dirs().is_empty());
    }
}
