//! The gate every operation passes to reach an open database, and that
//! `close()` shuts: once it is closed no operation starts, and `close()`
//! waits until every operation that started has finished (a write that was
//! acknowledged is then in a memtable, and the flush that follows carries
//! it).

use crate::sync::{Condvar, Mutex};

#[derive(Debug, Default)]
struct State {
    closed: bool,
    inside: usize,
}

/// Counts the operations in progress and refuses new ones once closed.
#[derive(Debug, Default)]
pub(crate) struct Gate {
    state: Mutex<State>,
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
        let mut state = self.state.lock();
        if state.closed {
            return None;
        }
        state.inside += 1;
        Some(Pass { gate: self })
    }

    /// Closes the gate and waits until every operation inside has left.
    /// Returns false if it was already closed (another `close` did, or is
    /// doing, the work).
    pub(crate) fn close(&self) -> bool {
        let mut state = self.state.lock();
        if state.closed {
            return false;
        }
        state.closed = true;
        while state.inside > 0 {
            self.idle.wait(&mut state);
        }
        true
    }

    /// Whether the gate is closed.
    pub(crate) fn is_closed(&self) -> bool {
        self.state.lock().closed
    }
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        let mut state = self.gate.state.lock();
        state.inside -= 1;
        let wake = state.closed && state.inside == 0;
        drop(state);
        if wake {
            self.gate.idle.notify_all();
        }
    }
}
