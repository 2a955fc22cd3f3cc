//! The lock census (feature `lock-census`, normal builds only): which of
//! the facade's locks a piece of code takes, each acquisition with the
//! source line that took it, the kind, and the thread.
//!
//! It exists to count what an operation costs in locks (a write, a
//! flush) and to keep that count from growing unnoticed: a test records
//! the operation and asserts on the census. Without the feature nothing
//! of it is compiled, and the locks take no extra step; with it, every
//! acquisition reads one atomic flag, and records only while a census
//! runs.
//!
//! What counts: [`Mutex::lock`](crate::Mutex::lock) and a successful
//! `try_lock`, [`RwLock::read`](crate::RwLock::read) and
//! [`write`](crate::RwLock::write) and their successful `try_` forms. A
//! [`Condvar`](crate::Condvar) wait's re-acquisition and
//! `MutexGuard::unlocked`'s are the same hold resumed and do not count;
//! neither do the `plain` (std) locks, which order nothing the facade
//! models.
//!
//! ```
//! use sync::Mutex;
//! use sync::census::{self, Scope};
//!
//! let a = Mutex::new(0);
//! let (_, census) = census::record(Scope::ThisThread, || {
//!     for _ in 0..2 {
//!         *a.lock() += 1;
//!     }
//! });
//! assert_eq!(census.len(), 2);
//! assert_eq!(census.by_site().len(), 1, "one line took the lock twice");
//! ```

use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt;
use std::panic::Location;

use crate::plain::{AtomicBool, Mutex, Ordering};

/// Which threads a census records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Only the thread that runs the recorded code.
    ThisThread,
    /// Every thread of the process while the code runs (background
    /// threads included: run the measured part alone).
    AllThreads,
}

/// How a lock was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// A [`Mutex`](crate::Mutex).
    Mutex,
    /// Shared access to an [`RwLock`](crate::RwLock).
    Read,
    /// Exclusive access to an [`RwLock`](crate::RwLock).
    Write,
}

/// One lock acquisition.
#[derive(Debug, Clone)]
pub struct Acquisition {
    /// The source line that took the lock.
    pub site: &'static Location<'static>,
    /// How it was taken.
    pub kind: Kind,
    /// The name of the thread that took it (`None` for an unnamed one).
    pub thread: Option<String>,
}

/// The acquisitions recorded by [`record`], in the order they happened.
#[derive(Debug, Clone, Default)]
pub struct Census {
    /// Every acquisition.
    pub acquisitions: Vec<Acquisition>,
}

impl Census {
    /// How many acquisitions there were.
    pub fn len(&self) -> usize {
        self.acquisitions.len()
    }

    /// Whether no lock was taken.
    pub fn is_empty(&self) -> bool {
        self.acquisitions.is_empty()
    }

    /// The acquisitions grouped by source line and kind, with their
    /// counts, in source order (file, line, column).
    pub fn by_site(&self) -> Vec<(String, Kind, usize)> {
        let mut sites: BTreeMap<(String, Kind), usize> = BTreeMap::new();
        for a in &self.acquisitions {
            *sites.entry((site_name(a.site), a.kind)).or_default() += 1;
        }
        sites.into_iter().map(|((s, k), n)| (s, k, n)).collect()
    }

    /// The acquisitions whose source file path contains `pattern`.
    pub fn count_in(&self, pattern: &str) -> usize {
        self.acquisitions
            .iter()
            .filter(|a| a.site.file().contains(pattern))
            .count()
    }
}

impl fmt::Display for Census {
    /// One line per site: the count, the kind and `file:line:column`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (site, kind, n) in self.by_site() {
            writeln!(f, "{n:>8} {kind:<5?} {site}")?;
        }
        write!(f, "{:>8} in all", self.len())
    }
}

fn site_name(site: &Location<'_>) -> String {
    format!("{}:{}:{}", site.file(), site.line(), site.column())
}

/// Whether a census runs (the one flag every acquisition reads).
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Whether the running census takes every thread.
static ALL_THREADS: AtomicBool = AtomicBool::new(false);
/// One census at a time; it holds what was recorded.
static RUNNING: Mutex<()> = Mutex::new(());
static RECORDED: Mutex<Vec<Acquisition>> = Mutex::new(Vec::new());

thread_local! {
    /// This thread runs a [`Scope::ThisThread`] census.
    static RECORDING_HERE: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` and returns what it returned with the census of the locks
/// taken meanwhile by the threads of `scope`. Censuses of several threads
/// run one after the other (a second waits for the first).
pub fn record<R>(scope: Scope, f: impl FnOnce() -> R) -> (R, Census) {
    let _one = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
    RECORDED.lock().unwrap_or_else(|e| e.into_inner()).clear();
    ALL_THREADS.store(scope == Scope::AllThreads, Ordering::SeqCst);
    RECORDING_HERE.with(|r| r.set(true));
    ACTIVE.store(true, Ordering::SeqCst);
    // Stops recording even if `f` panics.
    struct Stop;
    impl Drop for Stop {
        fn drop(&mut self) {
            ACTIVE.store(false, Ordering::SeqCst);
            RECORDING_HERE.with(|r| r.set(false));
        }
    }
    let stop = Stop;
    let result = f();
    drop(stop);
    let acquisitions = std::mem::take(&mut *RECORDED.lock().unwrap_or_else(|e| e.into_inner()));
    (result, Census { acquisitions })
}

/// Notes one acquisition (called by the facade's locks).
#[inline]
pub(crate) fn note(kind: Kind, site: &'static Location<'static>) {
    if ACTIVE.load(Ordering::Relaxed) {
        note_recording(kind, site);
    }
}

#[cold]
fn note_recording(kind: Kind, site: &'static Location<'static>) {
    if !ALL_THREADS.load(Ordering::Relaxed) && !RECORDING_HERE.with(Cell::get) {
        return;
    }
    let thread = std::thread::current().name().map(str::to_owned);
    RECORDED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Acquisition { site, kind, thread });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Mutex, RwLock};

    #[test]
    fn records_each_kind_at_its_line_and_only_while_recording() {
        let m = Mutex::new(0);
        let rw = RwLock::new(0);
        drop(m.lock()); // before: not recorded
        let ((), census) = record(Scope::ThisThread, || {
            *m.lock() += 1;
            drop(rw.read());
            *rw.write() += 1;
            drop(m.try_lock());
        });
        drop(m.lock()); // after: not recorded
        let kinds: Vec<Kind> = census.acquisitions.iter().map(|a| a.kind).collect();
        assert_eq!(kinds, [Kind::Mutex, Kind::Read, Kind::Write, Kind::Mutex]);
        assert!(
            census
                .acquisitions
                .iter()
                .all(|a| a.site.file().ends_with("census.rs"))
        );
        assert_eq!(census.count_in("census.rs"), 4);
        assert_eq!(census.by_site().len(), 4, "four lines took a lock");
    }

    #[test]
    fn this_thread_leaves_other_threads_out_and_all_threads_takes_them() {
        let m = crate::Arc::new(Mutex::new(0));
        let other = |m: &crate::Arc<Mutex<i32>>| {
            let m = crate::Arc::clone(m);
            std::thread::Builder::new()
                .name("census-other".into())
                .spawn(move || *m.lock() += 1)
                .expect("spawn")
                .join()
                .expect("no panic");
        };
        let ((), mine) = record(Scope::ThisThread, || other(&m));
        assert!(mine.is_empty(), "another thread's lock: {mine}");
        let ((), all) = record(Scope::AllThreads, || other(&m));
        // Other tests of this binary may run (and lock) meanwhile.
        let others = all
            .acquisitions
            .iter()
            .filter(|a| a.thread.as_deref() == Some("census-other"))
            .count();
        assert_eq!(others, 1, "{all}");
    }
}
