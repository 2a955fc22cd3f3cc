//! The crate's synchronisation primitives: the workspace's `sync` facade
//! (parking_lot and std normally, loom under `cfg(loom)`, so the loom models
//! exercise the real group-commit code).
//!
//! `Arc` is loom's under loom; `PlainArc` is `std::sync::Arc` in every
//! build, for immutable shared values (the sticky I/O error shared by every
//! failed writer, segment files, the flush handler), which loom's `Arc`
//! cannot hold when unsized.

pub(crate) use ::sync::plain::Arc as PlainArc;
pub(crate) use ::sync::*;
