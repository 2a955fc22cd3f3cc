//! The synchronisation facade of the crate.
//!
//! Everything that synchronises goes through this module: `parking_lot`
//! locks and `std` atomics, `Arc` and threads in normal builds, and the
//! `loom` equivalents under `cfg(loom)`, so the loom models check the real
//! flush loop. The API is parking_lot-shaped and infallible: `lock()` returns
//! the guard and `Condvar::wait` takes the guard by `&mut`.
//!
//! `Arc` is always `std::sync::Arc`, as in `region-group`: it appears in the
//! public API (`RegionGroup::new` returns one, `FlushTarget`s are shared
//! through one), so it must be the same type in every build.

pub(crate) use std::sync::Arc;

use std::time::Instant;

/// The current time. Under loom it is one fixed instant per process: loom
/// does not model time (its timed waits never time out), and a model must
/// behave the same on every replay, so deadlines never pass there.
pub(crate) fn now() -> Instant {
    #[cfg(loom)]
    {
        static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        *EPOCH.get_or_init(Instant::now)
    }
    #[cfg(not(loom))]
    {
        Instant::now()
    }
}

/// `now + wait`, or the latest instant the platform can represent short of
/// that when the sum overflows (a back-off of `Duration::MAX` means "until
/// asked").
pub(crate) fn deadline_after(now: Instant, wait: std::time::Duration) -> Instant {
    let mut wait = wait;
    loop {
        if let Some(deadline) = now.checked_add(wait) {
            return deadline;
        }
        wait /= 2;
    }
}

#[cfg(not(loom))]
mod imp {
    use std::time::Duration;

    pub(crate) use parking_lot::{Mutex, MutexGuard};

    /// A condition variable paired with [`Mutex`].
    #[derive(Debug, Default)]
    pub(crate) struct Condvar(parking_lot::Condvar);

    impl Condvar {
        pub(crate) fn new() -> Self {
            Condvar(parking_lot::Condvar::new())
        }

        /// Blocks until notified (spurious wake-ups are possible).
        pub(crate) fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
            self.0.wait(guard);
        }

        /// Blocks until notified or `timeout` elapsed; returns `true` if the
        /// wait timed out.
        pub(crate) fn wait_for<T>(&self, guard: &mut MutexGuard<'_, T>, timeout: Duration) -> bool {
            self.0.wait_for(guard, timeout).timed_out()
        }

        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }
    }

    /// A handle to a spawned thread.
    pub(crate) type JoinHandle<T> = std::thread::JoinHandle<T>;

    /// Spawns a named thread.
    pub(crate) fn spawn<F, T>(name: String, f: F) -> std::io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        std::thread::Builder::new().name(name).spawn(f)
    }
}

#[cfg(loom)]
mod imp {
    use std::ops::{Deref, DerefMut};
    use std::time::Duration;

    /// A loom mutex with an infallible, parking_lot-shaped API.
    #[derive(Debug)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    /// The guard of [`Mutex`]; the `Option` lets [`Condvar::wait`] move the
    /// loom guard in and out.
    #[derive(Debug)]
    pub(crate) struct MutexGuard<'a, T>(Option<loom::sync::MutexGuard<'a, T>>);

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Mutex(loom::sync::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            MutexGuard(Some(self.0.lock().expect("loom mutex poisoned")))
        }
    }

    impl<T> Deref for MutexGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            self.0
                .as_ref()
                .expect("guard present outside Condvar::wait")
        }
    }

    impl<T> DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            self.0
                .as_mut()
                .expect("guard present outside Condvar::wait")
        }
    }

    /// A loom condition variable with a parking_lot-shaped API.
    #[derive(Debug)]
    pub(crate) struct Condvar(loom::sync::Condvar);

    impl Condvar {
        pub(crate) fn new() -> Self {
            Condvar(loom::sync::Condvar::new())
        }

        pub(crate) fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
            let inner = guard.0.take().expect("guard present");
            guard.0 = Some(self.0.wait(inner).expect("loom mutex poisoned"));
        }

        /// Loom does not model time: this waits for a notification.
        pub(crate) fn wait_for<T>(&self, guard: &mut MutexGuard<'_, T>, timeout: Duration) -> bool {
            let inner = guard.0.take().expect("guard present");
            let (inner, result) = self
                .0
                .wait_timeout(inner, timeout)
                .expect("loom mutex poisoned");
            guard.0 = Some(inner);
            result.timed_out()
        }

        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }
    }

    /// A handle to a spawned loom thread.
    pub(crate) type JoinHandle<T> = loom::thread::JoinHandle<T>;

    /// Spawns a loom thread (loom ignores the name).
    pub(crate) fn spawn<F, T>(_name: String, f: F) -> std::io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        Ok(loom::thread::spawn(f))
    }
}

pub(crate) use imp::*;
