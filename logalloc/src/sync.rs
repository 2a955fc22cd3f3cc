//! The one place that names the synchronisation primitives.
//!
//! Normal builds use `parking_lot` locks and `std` atomics; `cfg(loom)`
//! builds use `loom::sync`, so the loom models exercise the real pool and
//! region code. The API is parking_lot-shaped and infallible: `lock()`,
//! `read()` and `write()` return the guard, `try_*` return an `Option`.
//!
//! `Arc` is always `std::sync::Arc`, also under loom: it appears in the
//! public API (`Arc<SegmentPool>`, `Arc<dyn RegionListener>`), and callers
//! name `std::sync::Arc`, so it must be the same type in every build. Only
//! locks and atomics carry the interleavings loom needs to explore.

pub(crate) use std::sync::Arc;

#[cfg(not(loom))]
mod imp {
    pub(crate) use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

    /// A mutex whose `lock` returns the guard directly.
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(parking_lot::Mutex<T>);

    pub(crate) type MutexGuard<'a, T> = parking_lot::MutexGuard<'a, T>;

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Mutex(parking_lot::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock()
        }
    }

    /// A reader-writer lock whose `read`/`write` return the guard directly.
    #[derive(Debug, Default)]
    pub(crate) struct RwLock<T>(parking_lot::RwLock<T>);

    pub(crate) type RwLockReadGuard<'a, T> = parking_lot::RwLockReadGuard<'a, T>;
    pub(crate) type RwLockWriteGuard<'a, T> = parking_lot::RwLockWriteGuard<'a, T>;

    impl<T> RwLock<T> {
        pub(crate) fn new(value: T) -> Self {
            RwLock(parking_lot::RwLock::new(value))
        }

        pub(crate) fn read(&self) -> RwLockReadGuard<'_, T> {
            self.0.read()
        }

        pub(crate) fn write(&self) -> RwLockWriteGuard<'_, T> {
            self.0.write()
        }

        pub(crate) fn try_write(&self) -> Option<RwLockWriteGuard<'_, T>> {
            self.0.try_write()
        }
    }
}

#[cfg(loom)]
mod imp {
    pub(crate) use loom::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

    /// A mutex whose `lock` returns the guard directly.
    #[derive(Debug)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    pub(crate) type MutexGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Mutex(loom::sync::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
        }
    }

    /// A reader-writer lock whose `read`/`write` return the guard directly.
    #[derive(Debug)]
    pub(crate) struct RwLock<T>(loom::sync::RwLock<T>);

    pub(crate) type RwLockReadGuard<'a, T> = loom::sync::RwLockReadGuard<'a, T>;
    pub(crate) type RwLockWriteGuard<'a, T> = loom::sync::RwLockWriteGuard<'a, T>;

    impl<T> RwLock<T> {
        pub(crate) fn new(value: T) -> Self {
            RwLock(loom::sync::RwLock::new(value))
        }

        pub(crate) fn read(&self) -> RwLockReadGuard<'_, T> {
            self.0
                .read()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
        }

        pub(crate) fn write(&self) -> RwLockWriteGuard<'_, T> {
            self.0
                .write()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
        }

        pub(crate) fn try_write(&self) -> Option<RwLockWriteGuard<'_, T>> {
            self.0.try_write().ok()
        }
    }
}

pub(crate) use imp::*;

/// A process-wide serial number for every new pool, from which the pool
/// seeds the epochs of its handle-table parts (so two pools of one process
/// start their epochs at different values).
///
/// A plain `std` atomic in every build, also under loom: loom atomics cannot
/// live in a `static`, and this counter orders nothing between threads (any
/// distinct values will do), so there is no interleaving for loom to explore.
pub(crate) fn next_pool_serial() -> u32 {
    static SERIAL: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}
