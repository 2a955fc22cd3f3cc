//! The one place that names the synchronisation primitives, shaped like
//! logalloc's and region-group's `sync.rs` (the lead will replace all three
//! with one workspace facade crate).
//!
//! Normal builds use a `parking_lot` reader-writer lock; `cfg(loom)` builds
//! use `loom::sync`, so the loom models run the real memtable. `Arc` is
//! always `std::sync::Arc`: it is part of the public API
//! (`Arc<Memtable>`, `Arc<dyn ReplacementSource>`).

pub(crate) use std::sync::Arc;

#[cfg(not(loom))]
mod imp {
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
    }
}

#[cfg(loom)]
mod imp {
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
    }
}

pub(crate) use imp::*;
