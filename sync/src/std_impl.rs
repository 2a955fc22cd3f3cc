//! Normal builds: newtypes over `parking_lot`, so that the API offered is
//! exactly the one the loom build offers too (code that compiles here
//! compiles under loom).

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::time::{Duration, Instant};

/// A mutual-exclusion lock whose [`lock`](Mutex::lock) returns the guard.
#[derive(Default)]
pub struct Mutex<T>(parking_lot::Mutex<T>);

/// The guard of a [`Mutex`]; the lock is released when it drops.
pub struct MutexGuard<'a, T>(parking_lot::MutexGuard<'a, T>);

impl<T> Mutex<T> {
    /// A new unlocked mutex holding `value`.
    pub fn new(value: T) -> Self {
        Mutex(parking_lot::Mutex::new(value))
    }

    /// Blocks until the lock is held.
    #[cfg_attr(feature = "lock-census", track_caller)]
    pub fn lock(&self) -> MutexGuard<'_, T> {
        #[cfg(feature = "lock-census")]
        crate::census::note(crate::census::Kind::Mutex, std::panic::Location::caller());
        MutexGuard(self.0.lock())
    }

    /// The lock if it is free now, `None` otherwise.
    #[cfg_attr(feature = "lock-census", track_caller)]
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        let guard = self.0.try_lock().map(MutexGuard);
        #[cfg(feature = "lock-census")]
        if guard.is_some() {
            crate::census::note(crate::census::Kind::Mutex, std::panic::Location::caller());
        }
        guard
    }

    /// The value, through exclusive access (no locking needed).
    pub fn get_mut(&mut self) -> &mut T {
        self.0.get_mut()
    }

    /// The value, consuming the mutex.
    pub fn into_inner(self) -> T {
        self.0.into_inner()
    }
}

impl<T> MutexGuard<'_, T> {
    /// Runs `f` with the lock released (for I/O), then takes it again.
    pub fn unlocked<R>(guard: &mut Self, f: impl FnOnce() -> R) -> R {
        parking_lot::MutexGuard::unlocked(&mut guard.0, f)
    }
}

impl<T> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

/// A reader-writer lock whose [`read`](RwLock::read) and
/// [`write`](RwLock::write) return the guard.
#[derive(Default)]
pub struct RwLock<T>(parking_lot::RwLock<T>);

/// Shared access to an [`RwLock`]'s value.
pub struct RwLockReadGuard<'a, T>(parking_lot::RwLockReadGuard<'a, T>);

/// Exclusive access to an [`RwLock`]'s value.
pub struct RwLockWriteGuard<'a, T>(parking_lot::RwLockWriteGuard<'a, T>);

impl<T> RwLock<T> {
    /// A new unlocked lock holding `value`.
    pub fn new(value: T) -> Self {
        RwLock(parking_lot::RwLock::new(value))
    }

    /// Blocks until shared access is held.
    #[cfg_attr(feature = "lock-census", track_caller)]
    pub fn read(&self) -> RwLockReadGuard<'_, T> {
        #[cfg(feature = "lock-census")]
        crate::census::note(crate::census::Kind::Read, std::panic::Location::caller());
        RwLockReadGuard(self.0.read())
    }

    /// Blocks until exclusive access is held.
    #[cfg_attr(feature = "lock-census", track_caller)]
    pub fn write(&self) -> RwLockWriteGuard<'_, T> {
        #[cfg(feature = "lock-census")]
        crate::census::note(crate::census::Kind::Write, std::panic::Location::caller());
        RwLockWriteGuard(self.0.write())
    }

    /// Shared access if it can be had now, `None` otherwise.
    #[cfg_attr(feature = "lock-census", track_caller)]
    pub fn try_read(&self) -> Option<RwLockReadGuard<'_, T>> {
        let guard = self.0.try_read().map(RwLockReadGuard);
        #[cfg(feature = "lock-census")]
        if guard.is_some() {
            crate::census::note(crate::census::Kind::Read, std::panic::Location::caller());
        }
        guard
    }

    /// Exclusive access if it can be had now, `None` otherwise.
    #[cfg_attr(feature = "lock-census", track_caller)]
    pub fn try_write(&self) -> Option<RwLockWriteGuard<'_, T>> {
        let guard = self.0.try_write().map(RwLockWriteGuard);
        #[cfg(feature = "lock-census")]
        if guard.is_some() {
            crate::census::note(crate::census::Kind::Write, std::panic::Location::caller());
        }
        guard
    }

    /// Exclusive access if it can be had within `timeout`, `None`
    /// otherwise. While it waits, new readers wait behind it (parking_lot's
    /// writer priority), so a stream of short readers cannot keep it out
    /// the way they keep out [`try_write`](Self::try_write).
    #[cfg_attr(feature = "lock-census", track_caller)]
    pub fn try_write_for(&self, timeout: std::time::Duration) -> Option<RwLockWriteGuard<'_, T>> {
        let guard = self.0.try_write_for(timeout).map(RwLockWriteGuard);
        #[cfg(feature = "lock-census")]
        if guard.is_some() {
            crate::census::note(crate::census::Kind::Write, std::panic::Location::caller());
        }
        guard
    }

    /// The value, through exclusive access (no locking needed).
    pub fn get_mut(&mut self) -> &mut T {
        self.0.get_mut()
    }

    /// The value, consuming the lock.
    pub fn into_inner(self) -> T {
        self.0.into_inner()
    }
}

impl<T> Deref for RwLockReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> Deref for RwLockWriteGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> DerefMut for RwLockWriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

/// A condition variable paired with [`Mutex`]. Spurious wake-ups are
/// possible: wait in a loop that re-checks the condition.
#[derive(Default)]
pub struct Condvar(parking_lot::Condvar);

impl Condvar {
    /// A new condition variable.
    pub fn new() -> Self {
        Condvar(parking_lot::Condvar::new())
    }

    /// Releases the lock, blocks until notified, and takes the lock again.
    pub fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
        self.0.wait(&mut guard.0);
    }

    /// Like [`wait`](Condvar::wait), for `timeout` at most; `true` if it
    /// timed out.
    pub fn wait_for<T>(&self, guard: &mut MutexGuard<'_, T>, timeout: Duration) -> bool {
        self.0.wait_for(&mut guard.0, timeout).timed_out()
    }

    /// Like [`wait`](Condvar::wait), until `deadline` at the latest; `true`
    /// if it timed out.
    pub fn wait_until<T>(&self, guard: &mut MutexGuard<'_, T>, deadline: Instant) -> bool {
        self.0.wait_until(&mut guard.0, deadline).timed_out()
    }

    /// Wakes one waiter, if any.
    pub fn notify_one(&self) {
        self.0.notify_one();
    }

    /// Wakes every waiter.
    pub fn notify_all(&self) {
        self.0.notify_all();
    }
}

// Opaque, so that any value may sit behind a lock in a `#[derive(Debug)]`
// struct, and so that formatting never takes (or waits for) a lock.
impl<T> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Mutex { .. }")
    }
}

impl<T> fmt::Debug for RwLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RwLock { .. }")
    }
}

impl fmt::Debug for Condvar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Condvar { .. }")
    }
}

impl<T: fmt::Debug> fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: fmt::Debug> fmt::Debug for RwLockReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: fmt::Debug> fmt::Debug for RwLockWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timed_waits_report_a_timeout() {
        let m = Mutex::new(());
        let cv = Condvar::new();
        let mut g = m.lock();
        assert!(cv.wait_for(&mut g, Duration::from_millis(1)));
        assert!(cv.wait_until(&mut g, Instant::now()));
    }

    #[test]
    fn try_lock_fails_while_held() {
        let m = Mutex::new(1);
        let g = m.lock();
        assert!(m.try_lock().is_none());
        drop(g);
        assert_eq!(*m.try_lock().expect("free"), 1);
        let rw = RwLock::new(2);
        let r = rw.read();
        assert!(rw.try_write().is_none());
        assert_eq!(*rw.try_read().expect("shared"), 2);
        drop(r);
        *rw.try_write().expect("free") = 3;
        assert_eq!(rw.into_inner(), 3);
    }

    #[test]
    fn debug_never_locks() {
        let m = Mutex::new(5);
        let _held = m.lock();
        assert_eq!(format!("{m:?}"), "Mutex { .. }");
    }
}
