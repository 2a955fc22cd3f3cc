//! Synchronisation facade: the only module that names `parking_lot`,
//! `std::sync` or `std::thread`.
//!
//! Normal builds use `parking_lot` locks and std threads; `cfg(loom)` builds
//! use `loom::sync` and `loom::thread`, so the loom models exercise the real
//! group-commit code. Both sides expose the same parking_lot-shaped,
//! infallible API: `lock()` returns the guard, `Condvar::wait` takes
//! `&mut guard`. Shaped like the other crates' `sync.rs`, so the lead can
//! swap it for the workspace-wide facade crate.

use std::time::Instant;

/// Plain shared ownership for immutable values (the sticky I/O error shared
/// by every failed writer, segment files, the flush handler). It is not a
/// synchronisation primitive, so it stays `std::sync::Arc` under loom too
/// (loom's `Arc` cannot hold unsized values).
pub(crate) use std::sync::Arc as PlainArc;

#[cfg(not(loom))]
pub(crate) use std::sync::Arc;

#[cfg(loom)]
pub(crate) use loom::sync::Arc;

/// A mutual-exclusion lock whose `lock()` cannot fail.
pub(crate) struct Mutex<T>(imp::Mutex<T>);

/// The guard returned by [`Mutex::lock`].
pub(crate) struct MutexGuard<'a, T>(imp::Guard<'a, T>);

/// A condition variable paired with [`Mutex`].
pub(crate) struct Condvar(imp::Condvar);

impl<T> std::fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Mutex { .. }")
    }
}

impl std::fmt::Debug for Condvar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Condvar { .. }")
    }
}

impl<T> Mutex<T> {
    /// A new unlocked mutex holding `value`.
    pub(crate) fn new(value: T) -> Self {
        Self(imp::Mutex::new(value))
    }

    /// Blocks until the lock is held.
    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        MutexGuard(imp::lock(&self.0))
    }

    /// Runs `f` with `guard`'s lock released (for I/O), then takes the lock
    /// again. `guard` must come from this mutex.
    pub(crate) fn unlocked<'a, R>(
        &'a self,
        guard: &mut MutexGuard<'a, T>,
        f: impl FnOnce() -> R,
    ) -> R {
        imp::unlocked(&self.0, &mut guard.0, f)
    }
}

impl<T> std::ops::Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        imp::deref(&self.0)
    }
}

impl<T> std::ops::DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        imp::deref_mut(&mut self.0)
    }
}

impl Condvar {
    /// A new condition variable.
    pub(crate) fn new() -> Self {
        Self(imp::Condvar::new())
    }

    /// Atomically releases the lock and waits for a notification.
    pub(crate) fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
        imp::wait(&self.0, &mut guard.0);
    }

    /// Like [`Condvar::wait`], but returns by `deadline` at the latest.
    /// Returns `true` if the wait timed out. (Loom does not model time: under
    /// loom this is a plain wait, so models must always notify.)
    pub(crate) fn wait_until<T>(&self, guard: &mut MutexGuard<'_, T>, deadline: Instant) -> bool {
        imp::wait_until(&self.0, &mut guard.0, deadline)
    }

    /// Wakes one waiter.
    pub(crate) fn notify_one(&self) {
        self.0.notify_one();
    }

    /// Wakes every waiter.
    pub(crate) fn notify_all(&self) {
        self.0.notify_all();
    }
}

/// Thread spawning and joining.
pub(crate) mod thread {
    #[cfg(not(loom))]
    use std::thread as imp;

    #[cfg(loom)]
    use loom::thread as imp;

    pub(crate) use imp::JoinHandle;

    /// Spawns a named thread.
    pub(crate) fn spawn_named<F, T>(name: String, f: F) -> std::io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        imp::Builder::new().name(name).spawn(f)
    }
}

#[cfg(not(loom))]
mod imp {
    use std::time::Instant;

    pub(super) use parking_lot::{Condvar, Mutex};
    pub(super) type Guard<'a, T> = parking_lot::MutexGuard<'a, T>;

    pub(super) fn lock<T>(m: &Mutex<T>) -> Guard<'_, T> {
        m.lock()
    }
    pub(super) fn unlocked<'a, T, R>(
        _m: &'a Mutex<T>,
        g: &mut Guard<'a, T>,
        f: impl FnOnce() -> R,
    ) -> R {
        parking_lot::MutexGuard::unlocked(g, f)
    }
    pub(super) fn deref<'g, T>(g: &'g Guard<'_, T>) -> &'g T {
        g
    }
    pub(super) fn deref_mut<'g, T>(g: &'g mut Guard<'_, T>) -> &'g mut T {
        &mut *g
    }
    pub(super) fn wait<T>(cv: &Condvar, g: &mut Guard<'_, T>) {
        cv.wait(g);
    }
    pub(super) fn wait_until<T>(cv: &Condvar, g: &mut Guard<'_, T>, deadline: Instant) -> bool {
        cv.wait_until(g, deadline).timed_out()
    }
}

#[cfg(loom)]
mod imp {
    use std::time::Instant;

    pub(super) use loom::sync::{Condvar, Mutex};
    /// Loom's `Condvar::wait` consumes the guard, so it is kept in an
    /// `Option` that is empty only for the duration of a wait.
    pub(super) type Guard<'a, T> = Option<loom::sync::MutexGuard<'a, T>>;

    const HELD: &str = "the guard is present except during a wait";

    pub(super) fn lock<T>(m: &Mutex<T>) -> Guard<'_, T> {
        Some(m.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }
    pub(super) fn unlocked<'a, T, R>(
        m: &'a Mutex<T>,
        g: &mut Guard<'a, T>,
        f: impl FnOnce() -> R,
    ) -> R {
        drop(g.take().expect(HELD));
        let r = f();
        *g = lock(m);
        r
    }
    pub(super) fn deref<'g, T>(g: &'g Guard<'_, T>) -> &'g T {
        g.as_ref().expect(HELD)
    }
    pub(super) fn deref_mut<'g, T>(g: &'g mut Guard<'_, T>) -> &'g mut T {
        g.as_mut().expect(HELD)
    }
    pub(super) fn wait<T>(cv: &Condvar, g: &mut Guard<'_, T>) {
        let inner = g.take().expect(HELD);
        *g = Some(
            cv.wait(inner)
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
    }
    pub(super) fn wait_until<T>(cv: &Condvar, g: &mut Guard<'_, T>, deadline: Instant) -> bool {
        let inner = g.take().expect(HELD);
        let timeout = deadline.saturating_duration_since(Instant::now());
        let (inner, result) = cv
            .wait_timeout(inner, timeout)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *g = Some(inner);
        result.timed_out()
    }
}
