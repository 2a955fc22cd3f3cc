//! The crate's one door to shared-state primitives.
//!
//! An open sstable is immutable and shared by its readers through [`Arc`];
//! the shared mutable state is a `Relaxed` diagnostic counter of blocks
//! read and the process-wide cache of open files (`file_cache`), a static
//! behind one lock that is held only for map updates. Statics cannot hold
//! loom types, so the crate takes the `std` types that the workspace's
//! `sync` facade keeps in every build (`sync::plain`), and `std`'s
//! `Mutex` and `LazyLock` for the cache's static; this also keeps the crate
//! usable from other crates' loom models.

pub(crate) use ::sync::plain::{Arc, AtomicU64, Ordering};
pub(crate) use std::sync::{LazyLock, Mutex, MutexGuard, PoisonError};
