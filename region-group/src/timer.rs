//! The helper thread that enforces async timeouts.
//!
//! Blocking waiters time out by themselves (`Condvar::wait_until`); a future
//! cannot, so a group that ever queues an async request with a timeout starts
//! one thread that sleeps on a condition variable until the earliest
//! deadline, marks expired waiters timed out and wakes their tasks. It exits
//! when the group is shut down or dropped.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::time::Instant;

use crate::group::{Shared, State};
use crate::sync::{Arc, thread};
use crate::waiter::Status;

/// Deadlines of queued async requests, earliest first.
#[derive(Debug, Default)]
pub(crate) struct TimerState {
    /// `(deadline, slab key, sequence)`; stale entries (the waiter left the
    /// queue, or its slot was reused) are skipped when they come up.
    deadlines: BinaryHeap<Reverse<(Instant, usize, u64)>>,
    /// Whether the thread runs.
    running: bool,
    /// Set when the group is dropped: the thread exits.
    pub(crate) stop: bool,
}

/// Registers the deadline of the queued waiter `(key, seq)`, starting the
/// timer thread if needed.
pub(crate) fn schedule(
    group: &Arc<Shared>,
    st: &mut State,
    deadline: Instant,
    key: usize,
    seq: u64,
) -> io::Result<()> {
    let earliest = st.timer.deadlines.peek().map(|Reverse((d, _, _))| *d);
    if !st.timer.running {
        let shared = Arc::clone(group);
        thread::Builder::new()
            .name(format!("{}-timeouts", group.name()))
            .spawn(move || run(&shared))?;
        st.timer.running = true;
    } else if earliest.is_none_or(|e| deadline < e) {
        group.timer_cv.notify_one();
    }
    st.timer.deadlines.push(Reverse((deadline, key, seq)));
    Ok(())
}

fn run(shared: &Arc<Shared>) {
    let mut st = shared.state.lock();
    loop {
        if st.shutdown || st.timer.stop {
            st.timer.running = false;
            st.timer.deadlines.clear();
            return;
        }
        let now = Instant::now();
        let mut wakes = Vec::new();
        while let Some(&Reverse((deadline, key, seq))) = st.timer.deadlines.peek() {
            if deadline > now {
                break;
            }
            st.timer.deadlines.pop();
            let expired = st
                .waiters
                .get(key)
                .is_some_and(|w| w.seq == seq && w.status == Status::Queued);
            if expired {
                st.unqueue(key);
                let waiter = &mut st.waiters[key];
                waiter.status = Status::TimedOut;
                wakes.extend(waiter.take_wake());
            }
        }
        if !wakes.is_empty() {
            drop(st);
            for wake in wakes {
                wake.wake();
            }
            st = shared.state.lock();
            continue;
        }
        match st.timer.deadlines.peek() {
            Some(&Reverse((deadline, _, _))) => {
                shared.timer_cv.wait_until(&mut st, deadline);
            }
            None => shared.timer_cv.wait(&mut st),
        }
    }
}
