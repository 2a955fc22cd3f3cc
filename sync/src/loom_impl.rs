//! `cfg(loom)` builds: loom's primitives behind the same parking_lot-shaped
//! API as `std_impl`.
//!
//! Loom's `Condvar::wait` consumes the guard, so the guards keep the loom
//! guard in an `Option` that is empty only while a wait holds it. Poisoning
//! is ignored (the lock is entered anyway), as parking_lot has none.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::PoisonError;
use std::time::{Duration, Instant};

const HELD: &str = "a guard holds its lock except during a Condvar wait";

/// A mutual-exclusion lock whose [`lock`](Mutex::lock) returns the guard.
pub struct Mutex<T>(loom::sync::Mutex<T>);

/// The guard of a [`Mutex`]; the lock is released when it drops.
pub struct MutexGuard<'a, T>(
    Option<loom::sync::MutexGuard<'a, T>>,
    &'a loom::sync::Mutex<T>,
);

impl<T: Default> Default for Mutex<T> {
    fn default() -> Self {
        Mutex::new(T::default())
    }
}

impl<T> Mutex<T> {
    /// A new unlocked mutex holding `value`.
    pub fn new(value: T) -> Self {
        Mutex(loom::sync::Mutex::new(value))
    }

    /// Blocks until the lock is held.
    pub fn lock(&self) -> MutexGuard<'_, T> {
        MutexGuard(
            Some(self.0.lock().unwrap_or_else(PoisonError::into_inner)),
            &self.0,
        )
    }

    /// The lock if it is free now, `None` otherwise.
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        match self.0.try_lock() {
            Ok(guard) => Some(MutexGuard(Some(guard), &self.0)),
            Err(std::sync::TryLockError::Poisoned(p)) => {
                Some(MutexGuard(Some(p.into_inner()), &self.0))
            }
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }

    /// The value, through exclusive access (no locking needed).
    pub fn get_mut(&mut self) -> &mut T {
        self.0.get_mut().unwrap_or_else(PoisonError::into_inner)
    }

    /// The value, consuming the mutex.
    pub fn into_inner(self) -> T {
        self.0.into_inner().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<T> MutexGuard<'_, T> {
    /// Runs `f` with the lock released (for I/O), then takes it again.
    pub fn unlocked<R>(guard: &mut Self, f: impl FnOnce() -> R) -> R {
        drop(guard.0.take().expect(HELD));
        let result = f();
        guard.0 = Some(guard.1.lock().unwrap_or_else(PoisonError::into_inner));
        result
    }
}

impl<T> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.0.as_ref().expect(HELD)
    }
}

impl<T> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.0.as_mut().expect(HELD)
    }
}

/// A reader-writer lock whose [`read`](RwLock::read) and
/// [`write`](RwLock::write) return the guard.
pub struct RwLock<T>(loom::sync::RwLock<T>);

/// Shared access to an [`RwLock`]'s value.
pub struct RwLockReadGuard<'a, T>(loom::sync::RwLockReadGuard<'a, T>);

/// Exclusive access to an [`RwLock`]'s value.
pub struct RwLockWriteGuard<'a, T>(loom::sync::RwLockWriteGuard<'a, T>);

impl<T: Default> Default for RwLock<T> {
    fn default() -> Self {
        RwLock::new(T::default())
    }
}

impl<T> RwLock<T> {
    /// A new unlocked lock holding `value`.
    pub fn new(value: T) -> Self {
        RwLock(loom::sync::RwLock::new(value))
    }

    /// Blocks until shared access is held.
    pub fn read(&self) -> RwLockReadGuard<'_, T> {
        RwLockReadGuard(self.0.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Blocks until exclusive access is held.
    pub fn write(&self) -> RwLockWriteGuard<'_, T> {
        RwLockWriteGuard(self.0.write().unwrap_or_else(PoisonError::into_inner))
    }

    /// Shared access if it can be had now, `None` otherwise.
    pub fn try_read(&self) -> Option<RwLockReadGuard<'_, T>> {
        match self.0.try_read() {
            Ok(guard) => Some(RwLockReadGuard(guard)),
            Err(std::sync::TryLockError::Poisoned(p)) => Some(RwLockReadGuard(p.into_inner())),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }

    /// Exclusive access if it can be had now, `None` otherwise.
    pub fn try_write(&self) -> Option<RwLockWriteGuard<'_, T>> {
        match self.0.try_write() {
            Ok(guard) => Some(RwLockWriteGuard(guard)),
            Err(std::sync::TryLockError::Poisoned(p)) => Some(RwLockWriteGuard(p.into_inner())),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }

    /// Exclusive access, waiting as long as it takes: a model has no time,
    /// so the timeout of the real build becomes an unbounded wait here, and
    /// loom reports the deadlocks a timeout would only hide.
    pub fn try_write_for(&self, _timeout: std::time::Duration) -> Option<RwLockWriteGuard<'_, T>> {
        Some(self.write())
    }

    /// The value, through exclusive access (no locking needed).
    pub fn get_mut(&mut self) -> &mut T {
        self.0.get_mut().unwrap_or_else(PoisonError::into_inner)
    }

    /// The value, consuming the lock.
    pub fn into_inner(self) -> T {
        self.0.into_inner().unwrap_or_else(PoisonError::into_inner)
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

/// A condition variable paired with [`Mutex`]. Loom does not model time:
/// the timed waits are plain waits that never time out.
#[derive(Default)]
pub struct Condvar(loom::sync::Condvar);

impl Condvar {
    /// A new condition variable.
    pub fn new() -> Self {
        Condvar(loom::sync::Condvar::new())
    }

    /// Releases the lock, blocks until notified, and takes the lock again.
    pub fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
        let inner = guard.0.take().expect(HELD);
        guard.0 = Some(self.0.wait(inner).unwrap_or_else(PoisonError::into_inner));
    }

    /// Under loom, a plain [`wait`](Condvar::wait); never times out.
    pub fn wait_for<T>(&self, guard: &mut MutexGuard<'_, T>, timeout: Duration) -> bool {
        let inner = guard.0.take().expect(HELD);
        let (inner, result) = self
            .0
            .wait_timeout(inner, timeout)
            .unwrap_or_else(PoisonError::into_inner);
        guard.0 = Some(inner);
        result.timed_out()
    }

    /// Under loom, a plain [`wait`](Condvar::wait); never times out.
    pub fn wait_until<T>(&self, guard: &mut MutexGuard<'_, T>, deadline: Instant) -> bool {
        let timeout = deadline.saturating_duration_since(crate::time::now());
        self.wait_for(guard, timeout)
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

    /// The facade's own model: a notification sent before or after the
    /// waiter blocks is never lost, in every interleaving.
    #[test]
    fn loom_condvar_wakes_the_waiter() {
        loom::model(|| {
            let pair = crate::Arc::new((Mutex::new(false), Condvar::new()));
            let signaller = crate::Arc::clone(&pair);
            let t = loom::thread::spawn(move || {
                *signaller.0.lock() = true;
                signaller.1.notify_one();
            });
            let mut ready = pair.0.lock();
            while !*ready {
                pair.1.wait_until(&mut ready, crate::time::now());
            }
            drop(ready);
            t.join().expect("no panic");
        });
    }

    /// An `Arc<dyn ..>` made through the facade is loom's: shared with
    /// another thread, counted by loom, and released by the model's end.
    #[test]
    fn loom_a_dyn_arc_is_tracked_across_threads() {
        loom::model(|| {
            let answer: crate::Arc<dyn Fn() -> usize + Send + Sync> = crate::arc_dyn!(|| 7usize);
            let other = crate::Arc::clone(&answer);
            let t = loom::thread::spawn(move || other());
            assert_eq!(answer(), 7);
            assert_eq!(t.join().expect("no panic"), 7);
            assert_eq!(crate::Arc::strong_count(&answer), 1);
        });
    }
}
