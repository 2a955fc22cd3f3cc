//! The crate's synchronisation primitives: the workspace's `sync` facade
//! (parking_lot and std normally, loom under `cfg(loom)`, so the loom models
//! exercise the real scheduler code).
//!
//! `Arc` is loom's under loom (it reports leaks at the end of a model);
//! `PlainArc` is `std::sync::Arc` in every build for the one kind of value
//! that needs std's: the error sources shared by every handle of a flush,
//! which the crate's `Error` carries as `#[source]` (std's `Arc<E>` is an
//! `Error`, loom's is not).

pub(crate) use ::sync::plain::Arc as PlainArc;
pub(crate) use ::sync::*;
