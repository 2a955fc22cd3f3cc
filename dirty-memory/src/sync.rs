//! The crate's synchronisation primitives: the workspace's `sync` facade
//! (parking_lot and std normally, loom under `cfg(loom)`, so the loom models
//! check the real flush loop), with the names this crate uses.
//!
//! `Arc` is loom's under loom: the manager's state shared with its flush
//! thread and with every [`Flush`](crate::Flush) handle, its loop's wake-up
//! state, and the completion cells explicit flushes wait on, so the models'
//! leak check covers them. `PlainArc` is `std::sync::Arc` in every build for
//! what crosses the public API as `std::sync::Arc`: the region group
//! (`region-group` hands it out so), the flush target (an owner passes a
//! clone of an `Arc` it keeps, which loom's `Arc` cannot coerce to `Arc<dyn
//! FlushTarget>`), the regions' owners a flush carries, the reclaim
//! callbacks given to the group, and error sources (`#[source]` needs std's
//! `Arc<E>`, which is an `Error`; loom's is not).

pub(crate) use ::sync::plain::Arc as PlainArc;
pub(crate) use ::sync::thread::{JoinHandle, spawn_named as spawn};
pub(crate) use ::sync::time::{deadline_after, now};
pub(crate) use ::sync::*;
