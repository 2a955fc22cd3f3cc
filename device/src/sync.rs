//! The crate's synchronisation primitives: the workspace's `sync` facade.
//!
//! The bucket's one lock and the manual clock's lock and condition
//! variable come from the facade (loom's under `cfg(loom)`, so the loom
//! model runs the real bucket); the counters are `Relaxed` statistics that
//! order nothing, and `Arc` crosses the public API, so both are the `std`
//! types the facade keeps in every build (`sync::plain`).

pub(crate) use ::sync::plain::{Arc, AtomicU64, Ordering};
pub(crate) use ::sync::{Condvar, Mutex};
