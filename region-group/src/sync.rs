//! The crate's synchronisation primitives: the workspace's `sync` facade
//! (parking_lot and std normally, loom under `cfg(loom)`, so the loom models
//! check the real group code).
//!
//! `Arc` is loom's under loom: the group's shared state (held by the
//! group and by its timeout thread) and each blocked writer's condition
//! variable, so the models' leak check covers them. `PlainArc` is
//! `std::sync::Arc` in every build for what the public API hands out or
//! takes, which callers hold as `std::sync::Arc`: the group itself
//! (`RegionGroup::new` returns one, and it listens to its regions as
//! itself: `logalloc`'s `Region::listen` takes a std `Arc<dyn
//! RegionListener>`), the reclaim callbacks and the regions' owners (`Arc<dyn
//! ..>` values).

pub(crate) use ::sync::plain::Arc as PlainArc;
pub(crate) use ::sync::*;
