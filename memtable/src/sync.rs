//! The crate's synchronisation primitives: the workspace's `sync` facade
//! (parking_lot normally, loom under `cfg(loom)`, so the loom models run the
//! real memtable).
//!
//! `Arc` is always `std::sync::Arc`: it is part of the public API
//! (`Arc<Memtable>`, `Arc<dyn ReplacementSource>`), so it must be the same
//! type in every build.

pub(crate) use ::sync::plain::Arc;
pub(crate) use ::sync::*;
