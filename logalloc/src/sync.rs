//! The crate's synchronisation primitives: the workspace's `sync` facade
//! (parking_lot and std normally, loom under `cfg(loom)`, so the loom models
//! exercise the real pool and region code).
//!
//! `Arc` is always `std::sync::Arc`, also under loom: it appears in the
//! public API (`Arc<SegmentPool>`, `Arc<dyn RegionListener>`), and callers
//! name `std::sync::Arc`, so it must be the same type in every build. Only
//! locks and atomics carry the interleavings loom needs to explore.

pub(crate) use ::sync::plain::Arc;
pub(crate) use ::sync::*;

/// A process-wide serial number for every new pool, from which the pool
/// seeds the epochs of its handle-table parts (so two pools of one process
/// start their epochs at different values).
///
/// A plain `std` atomic in every build, also under loom: loom atomics cannot
/// live in a `static`, and this counter orders nothing between threads (any
/// distinct values will do), so there is no interleaving for loom to explore.
pub(crate) fn next_pool_serial() -> u32 {
    static SERIAL: ::sync::plain::AtomicU32 = ::sync::plain::AtomicU32::new(0);
    SERIAL.fetch_add(1, Ordering::Relaxed)
}
