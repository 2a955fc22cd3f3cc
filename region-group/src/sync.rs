//! The crate's synchronisation primitives: the workspace's `sync` facade
//! (parking_lot and std normally, loom under `cfg(loom)`, so the loom models
//! check the real group code).
//!
//! `Arc` is always `std::sync::Arc`: it appears in the public API
//! (`RegionGroup::new` returns one, and logalloc's `Region::listen` takes
//! one), so it must be the same type in every build.

pub(crate) use ::sync::plain::Arc;
pub(crate) use ::sync::*;
