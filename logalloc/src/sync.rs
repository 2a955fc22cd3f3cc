//! The crate's synchronisation primitives: the workspace's `sync` facade
//! (parking_lot and std normally, loom under `cfg(loom)`, so the loom models
//! exercise the real pool and region code).
//!
//! `Arc` is loom's under loom: the region state shared between a region
//! and its pool's registry (`Arc<RegionShared>`), so the models' leak check
//! covers it. `PlainArc` is `std::sync::Arc` in every build for the two
//! values of the public API, which every dependent crate holds as
//! `std::sync::Arc`: the pool (`SegmentPool::new` returns
//! `Arc<SegmentPool>`) and a region's listener (`Region::listen` takes an
//! `Arc<dyn RegionListener>`). The listener cannot be loom's yet: callers
//! hand over a clone of an `Arc` they keep (a region group listens to its
//! regions as itself), which loom's `Arc`, unable to coerce, cannot turn
//! into an `Arc<dyn RegionListener>`; and merges compare listeners by
//! address, so a per-region wrapper would change what they report.

pub(crate) use ::sync::plain::Arc as PlainArc;
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
