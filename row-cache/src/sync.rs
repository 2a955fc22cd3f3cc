//! The crate's synchronisation primitives: the workspace's `sync` facade
//! (parking_lot normally, loom under `cfg(loom)`, so the loom models run the
//! real cache).
//!
//! `Arc` is loom's under loom: the cache's shared state (held by the cache
//! and its readers) and the index and counters its eviction callback holds
//! from inside the region, so the models' leak check covers them.
//! `PlainArc` is `std::sync::Arc` in every build for what crosses the
//! public API as `std::sync::Arc` (the pool, the underlying source and a
//! region listener: `Arc<dyn ..>` values whose owners keep clones, which
//! loom's `Arc` cannot coerce), and for a cached partition's immutable
//! pieces (`Arc<[Piece]>`, made from a `Vec`, which loom's `Arc` cannot
//! be).

pub(crate) use ::sync::plain::Arc as PlainArc;
pub(crate) use ::sync::{Arc, Mutex, RwLock};
