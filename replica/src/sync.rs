//! The crate's one door to thread synchronisation.
//!
//! The workspace's sync facade (parking_lot normally, loom under
//! `cfg(loom)`) is being written alongside this crate; until it lands this
//! module re-exports parking_lot-shaped types directly, so switching to the
//! facade changes these lines and nothing else. Nothing in the crate names
//! `parking_lot::` or `std::sync::` outside this module.

pub(crate) use parking_lot::{Condvar, Mutex};
pub(crate) use std::sync::Arc;
#[cfg(feature = "stress")]
pub(crate) use std::sync::atomic::AtomicBool;
pub(crate) use std::sync::atomic::{AtomicU64, Ordering};
