//! The crate's synchronisation primitives: the workspace's `sync` facade
//! (parking_lot and std normally): the crate's code takes its locks and
//! atomics from here.
//!
//! The load generator is never run under loom: its atomics are the
//! facade's `plain` ones.

pub(crate) use ::sync::plain::{Arc, AtomicBool, AtomicU64, Ordering};
pub(crate) use ::sync::{Condvar, Mutex};
