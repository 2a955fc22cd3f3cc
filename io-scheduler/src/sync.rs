//! The crate's synchronisation primitives: the workspace's `sync` facade
//! (loom's under `cfg(loom)`, so the loom model runs the real queue); the
//! clock crosses the public API as a `std` `Arc`.

pub(crate) use ::sync::plain::Arc as PlainArc;
pub(crate) use ::sync::{Condvar, Mutex};
