//! The crate's synchronisation primitives: the workspace's `sync` facade
//! (parking_lot and std normally, loom under `cfg(loom)`). Nothing in the
//! crate names `parking_lot::` or `std::sync::` outside this module.
//!
//! `Arc` is always `std::sync::Arc`: a table is made with
//! `Arc::new_cyclic` and reached through `Weak` (by its flushes, its cache
//! source, its compaction tickets), which loom's `Arc` lacks; and the crate
//! holds the `Arc`s the other crates' public APIs hand out or take as std's
//! (the pool, region groups, memtables, flush targets, compaction tables).
//! The loom models of this crate drive its memtable list with fakes.

/// The gate's word: loom's under `cfg(loom)`, so the models that close the
/// gate explore its interleavings (the other atomics above are counters
/// and flags that order nothing the models check).
pub(crate) use ::sync::AtomicUsize;
pub(crate) use ::sync::plain::{Arc, OnceLock, Weak};
pub(crate) use ::sync::plain::{AtomicBool, AtomicU64, Ordering};
pub(crate) use ::sync::{Condvar, Mutex, RwLock};
