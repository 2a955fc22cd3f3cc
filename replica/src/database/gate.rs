//! The gate every operation passes to reach an open database, and that
//! `close()` shuts: once it is closed no operation starts, and `close()`
//! waits until every operation that started has finished (a write that was
//! acknowledged is then in a memtable, and the flush that follows carries
//! it).
//!
//! Entering and leaving are one atomic operation each on a word that
//! holds the count of operations inside and a closed bit, so an operation
//! takes no lock (every operation of the database passes here: a mutex
//! was two database-wide lock acquisitions per write). Only `close()` and
//! the last operation to leave a closed gate take the mutex, to wait and
//! to wake.

use crate::sync::{AtomicUsize, Condvar, Mutex, Ordering};

/// The closed bit of [`Gate::word`]; the bits below count operations.
const CLOSED: usize = 1 << (usize::BITS - 1);

/// Counts the operations in progress and refuses new ones once closed.
#[derive(Debug, Default)]
pub(crate) struct Gate {
    /// Operations inside, and [`CLOSED`].
    word: AtomicUsize,
    /// Held by `close()` while it waits, and by the last operation to leave
    /// a closed gate while it wakes it, so the wake is never missed.
    idle_lock: Mutex<()>,
    idle: Condvar,
}

/// An operation in progress; dropping it leaves the gate.
#[derive(Debug)]
pub(crate) struct Pass<'a> {
    gate: &'a Gate,
}

impl Gate {
    /// A new, open gate.
    pub(crate) fn new() -> Self {
        Gate::default()
    }

    /// Lets an operation in, or `None` once the gate is closed.
    pub(crate) fn enter(&self) -> Option<Pass<'_>> {
        let before = self.word.fetch_add(1, Ordering::Acquire);
        if before & CLOSED != 0 {
            // Closed: not in after all. Leaving may be what `close()`
            // waits for (it counted this entry).
            self.leave();
            return None;
        }
        Some(Pass { gate: self })
    }

    /// Leaves the gate; the last operation out of a closed gate wakes
    /// `close()`.
    fn leave(&self) {
        let before = self.word.fetch_sub(1, Ordering::Release);
        if before == CLOSED | 1 {
            let _held = self.idle_lock.lock();
            self.idle.notify_all();
        }
    }

    /// Closes the gate and waits until every operation inside has left.
    /// Returns false if it was already closed (another `close` did, or is
    /// doing, the work).
    pub(crate) fn close(&self) -> bool {
        let mut held = self.idle_lock.lock();
        if self.word.fetch_or(CLOSED, Ordering::AcqRel) & CLOSED != 0 {
            return false;
        }
        // The last operation out takes `idle_lock` to wake: it cannot do
        // so between this check and the wait, which releases the lock.
        while self.word.load(Ordering::Acquire) != CLOSED {
            self.idle.wait(&mut held);
        }
        true
    }

    /// Whether the gate is closed.
    pub(crate) fn is_closed(&self) -> bool {
        self.word.load(Ordering::Acquire) & CLOSED != 0
    }
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        self.gate.leave();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Single-threaded: the counts and the closed bit. Closing while
    /// operations are inside is the loom model
    /// `loom_close_against_a_write_and_a_flush_keeps_every_acknowledged_write`.
    #[test]
    fn entries_are_counted_and_a_closed_gate_refuses() {
        let gate = Gate::new();
        let a = gate.enter().expect("open");
        let b = gate.enter().expect("open");
        assert_eq!(gate.word.load(Ordering::Acquire), 2);
        drop(a);
        drop(b);
        assert_eq!(gate.word.load(Ordering::Acquire), 0);
        assert!(gate.close(), "the first close does the work");
        assert!(gate.is_closed());
        assert!(gate.enter().is_none(), "closed: nobody enters");
        assert_eq!(
            gate.word.load(Ordering::Acquire),
            CLOSED,
            "a refused entry leaves no count behind"
        );
        assert!(!gate.close(), "a second close finds it closed");
    }
}
