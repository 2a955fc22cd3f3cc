//! The crate's one door to synchronisation primitives: `std` normally,
//! `loom` under `cfg(loom)`. Open sstables are immutable and shared by
//! their readers through [`Arc`]; the only mutable shared state is a
//! diagnostic counter.

#[cfg(not(loom))]
pub(crate) use std::sync::Arc;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicU64, Ordering};

#[cfg(loom)]
pub(crate) use loom::sync::Arc;
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, Ordering};
