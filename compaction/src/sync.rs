//! The crate's synchronisation primitives: the workspace's `sync` facade
//! (parking_lot and std normally, loom under `cfg(loom)`), so the loom
//! models of the set swap and of close run the real code.
//!
//! `PlainArc` is `std::sync::Arc` in every build, for trait objects (the
//! owner of a table) that loom's `Arc` cannot hold; metrics counters that
//! order nothing are `plain` atomics.

pub(crate) use ::sync::plain::{Arc as PlainArc, AtomicU64 as PlainAtomicU64};
pub(crate) use ::sync::*;
