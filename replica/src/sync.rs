//! The crate's synchronisation primitives: the workspace's `sync` facade
//! (parking_lot and std normally, loom under `cfg(loom)`). Nothing in the
//! crate names `parking_lot::` or `std::sync::` outside this module.
//!
//! `Arc` is always `std::sync::Arc`: it crosses the public API.

pub(crate) use ::sync::plain::{Arc, Weak};
pub(crate) use ::sync::plain::{AtomicBool, AtomicU64, Ordering};
pub(crate) use ::sync::{Condvar, Mutex, RwLock};
