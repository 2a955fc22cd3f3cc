//! The crate's synchronisation primitives: the workspace's `sync` facade
//! (parking_lot and std normally, loom under `cfg(loom)`, so the loom models
//! check the real flush loop), with the names this crate uses.
//!
//! `Arc` is always `std::sync::Arc`, as in `region-group`: it appears in the
//! public API (`RegionGroup::new` returns one, `FlushTarget`s are shared
//! through one), so it must be the same type in every build.

pub(crate) use ::sync::plain::Arc;
pub(crate) use ::sync::thread::{JoinHandle, spawn_named as spawn};
pub(crate) use ::sync::time::{deadline_after, now};
pub(crate) use ::sync::*;
