//! The synchronisation facade: the only module that names `parking_lot`,
//! `std::sync` or `std::thread`.
//!
//! Normal builds use `parking_lot`'s `Mutex` and `Condvar` and `std::thread`;
//! `cfg(loom)` builds use `loom`'s, wrapped so that both expose the same
//! parking_lot-shaped, infallible API (`lock()` returns the guard,
//! `Condvar::wait(&mut guard)`). The loom models in this crate therefore check
//! the real group code, not a copy of it.
//!
//! `Arc` is always `std::sync::Arc`: it appears in the public API
//! (`RegionGroup::new` returns one, and logalloc's `Region::listen` takes
//! one), so it must be the same type in every build.

pub(crate) use std::sync::Arc;

#[cfg(not(loom))]
mod imp {
    use std::time::Instant;

    pub(crate) use parking_lot::{Mutex, MutexGuard};
    pub(crate) use std::thread;

    /// A condition variable paired with the facade's [`Mutex`].
    #[derive(Debug, Default)]
    pub(crate) struct Condvar(parking_lot::Condvar);

    impl Condvar {
        /// A new condition variable.
        pub(crate) fn new() -> Self {
            Condvar(parking_lot::Condvar::new())
        }

        /// Blocks until notified (spurious wake-ups are possible).
        pub(crate) fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
            self.0.wait(guard);
        }

        /// Blocks until notified or until `deadline`; returns `true` if the
        /// wait timed out.
        pub(crate) fn wait_until<T>(
            &self,
            guard: &mut MutexGuard<'_, T>,
            deadline: Instant,
        ) -> bool {
            self.0.wait_until(guard, deadline).timed_out()
        }

        /// Wakes one waiter.
        pub(crate) fn notify_one(&self) {
            self.0.notify_one();
        }
    }
}

#[cfg(loom)]
mod imp {
    use std::ops::{Deref, DerefMut};
    use std::time::Instant;

    pub(crate) use loom::thread;

    /// `loom::sync::Mutex` with an infallible `lock()`.
    #[derive(Debug)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    /// The guard of the facade's loom [`Mutex`]; the `Option` lets
    /// [`Condvar::wait`] hand the inner guard to loom by value.
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
            self.0.as_ref().expect("guard present outside wait")
        }
    }

    impl<T> DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            self.0.as_mut().expect("guard present outside wait")
        }
    }

    /// `loom::sync::Condvar` with the parking_lot-shaped API.
    #[derive(Debug)]
    pub(crate) struct Condvar(loom::sync::Condvar);

    impl Condvar {
        pub(crate) fn new() -> Self {
            Condvar(loom::sync::Condvar::new())
        }

        pub(crate) fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
            let inner = guard.0.take().expect("guard present outside wait");
            guard.0 = Some(self.0.wait(inner).expect("loom mutex poisoned"));
        }

        /// Loom does not model time: this waits for a notification and never
        /// reports a timeout.
        pub(crate) fn wait_until<T>(
            &self,
            guard: &mut MutexGuard<'_, T>,
            _deadline: Instant,
        ) -> bool {
            self.wait(guard);
            false
        }

        pub(crate) fn notify_one(&self) {
            self.0.notify_one();
        }
    }
}

pub(crate) use imp::{Condvar, Mutex, MutexGuard, thread};
