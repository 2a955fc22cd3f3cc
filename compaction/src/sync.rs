//! The crate's synchronisation primitives: the workspace's `sync` facade
//! (parking_lot and std normally, loom under `cfg(loom)`), so the loom
//! models of the set swap and of close run the real code.
//!
//! `Arc` is loom's under loom: the manager's shared state and its major
//! compactions' result slots, and the set's counters, so the models' leak
//! check covers them. `PlainArc` is `std::sync::Arc` in every build for the
//! trait objects that cross the public API as `std::sync::Arc`: the table
//! handed to `CompactionManager::submit` and `major`, and the job's clock;
//! their owner (`replica`) still holds them in std `Arc`s. Metrics
//! counters that order nothing are `plain` atomics.

pub(crate) use ::sync::plain::{Arc as PlainArc, AtomicU64 as PlainAtomicU64};
pub(crate) use ::sync::*;
