//! The crate's synchronisation primitives: the workspace's `sync` facade
//! (parking_lot normally, loom under `cfg(loom)`, so the loom models run the
//! real memtable).
//!
//! `Arc` is always `std::sync::Arc`: every `Arc` of the crate is part of
//! the public API, so it must be the same type in every build. A memtable
//! is handed out as `Arc<Memtable>` (its readers hold clones; its owner,
//! `replica`, keeps it next to values it reaches through `Weak`, which
//! loom's `Arc` lacks), and a flushed memtable's replacement is a clone of
//! an `Arc` its owner keeps (`Arc<dyn ReplacementSource>`), which loom's
//! `Arc` cannot coerce. The region it lives in keeps its own state in the
//! facade's (loom's) `Arc`, in `logalloc`.

pub(crate) use ::sync::plain::Arc;
pub(crate) use ::sync::*;
