//! A point where one thread stops, the first time it gets there, until the
//! test releases it: how the interleaving tests pause a flush or a writer
//! at a test hook (`Database::set_test_hook`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// A one-shot stop: armed when made, disarmed by the first thread that
/// reaches it.
#[derive(Default)]
pub(crate) struct Pause {
    armed: AtomicBool,
    state: Mutex<(bool, bool)>, // (reached, released)
    cv: Condvar,
}

impl Pause {
    /// A pause that stops the first thread to call [`stop_here`](Self::stop_here).
    pub(crate) fn armed() -> Arc<Pause> {
        let p = Pause::default();
        p.armed.store(true, Ordering::SeqCst);
        Arc::new(p)
    }

    /// Stops here until released, the first time only.
    pub(crate) fn stop_here(&self) {
        if !self.armed.swap(false, Ordering::SeqCst) {
            return;
        }
        let mut st = self.state.lock().unwrap();
        st.0 = true;
        self.cv.notify_all();
        while !st.1 {
            st = self.cv.wait(st).unwrap();
        }
    }

    /// Waits until a thread stopped here.
    pub(crate) fn wait_reached(&self) {
        let mut st = self.state.lock().unwrap();
        while !st.0 {
            st = self.cv.wait(st).unwrap();
        }
    }

    /// Waits until a thread stopped here or `gave_up` says to stop waiting
    /// (checked every few milliseconds); returns whether one stopped.
    #[allow(dead_code, reason = "not every test that pauses needs it")]
    pub(crate) fn wait_reached_unless(&self, gave_up: impl Fn() -> bool) -> bool {
        let mut st = self.state.lock().unwrap();
        while !st.0 {
            if gave_up() {
                return false;
            }
            st = self
                .cv
                .wait_timeout(st, std::time::Duration::from_millis(5))
                .unwrap()
                .0;
        }
        true
    }

    /// Lets the stopped thread (and any later one) go on.
    pub(crate) fn release(&self) {
        self.state.lock().unwrap().1 = true;
        self.cv.notify_all();
    }
}

/// A pause at `point` of `db`: installs the database's test hook, which
/// stops the first thread to reach `point` (every other point passes).
#[allow(
    dead_code,
    reason = "the tests that pause at several points set their own hook"
)]
pub(crate) fn at(db: &replica::Database, point: replica::HookPoint) -> Arc<Pause> {
    let pause = Pause::armed();
    let stop = Arc::clone(&pause);
    db.set_test_hook(Some(Arc::new(move |reached| {
        if reached == point {
            stop.stop_here();
        }
    })));
    pause
}
