//! The crate's synchronisation primitives: the workspace's `sync` facade
//! (parking_lot and std normally, loom under `cfg(loom)`, so the loom models
//! exercise the real scheduler code).
//!
//! `Arc` is loom's under loom (it reports leaks at the end of a model);
//! `PlainArc` is `std::sync::Arc` in every build, for immutable values such
//! as the error sources shared by every handle of a flush (loom's `Arc`
//! cannot hold `dyn Error`).

pub(crate) use ::sync::plain::Arc as PlainArc;
pub(crate) use ::sync::*;
