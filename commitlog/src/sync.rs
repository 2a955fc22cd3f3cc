//! The crate's synchronisation primitives: the workspace's `sync` facade
//! (parking_lot and std normally, loom under `cfg(loom)`, so the loom models
//! exercise the real group-commit code).
//!
//! `Arc` is loom's under loom, segment files and the flush handler
//! included (`dyn` values, made with `arc_from_std` / `arc_dyn!`, since
//! loom's `Arc` cannot coerce). `PlainArc` is `std::sync::Arc` in every
//! build for the one value that needs std's: the sticky I/O error shared
//! by every failed writer, which [`Error::Failed`](crate::Error::Failed)
//! carries as its `#[source]` (std's `Arc<E>` is an `Error`, loom's is
//! not).

pub(crate) use ::sync::plain::Arc as PlainArc;
pub(crate) use ::sync::*;
pub(crate) use ::sync::{arc_dyn, arc_from_std};
