//! The crate's synchronisation primitives: the workspace's `sync` facade
//! (parking_lot normally, loom under `cfg(loom)`, so the loom models run the
//! real cache).
//!
//! `Arc` is always `std::sync::Arc`: it holds `dyn` values
//! (`Arc<dyn UnderlyingSource>`) and crosses the public API, so it must be
//! the same type in every build. The locks are the modelled ones.

pub(crate) use ::sync::plain::Arc;
pub(crate) use ::sync::{Mutex, RwLock};
