//! The crate's one door to `std::sync`.
//!
//! Nothing here coordinates threads: an open sstable is immutable and
//! shared by its readers through [`Arc`], and the only shared mutable state
//! is a `Relaxed` diagnostic counter of blocks read. There is no protocol
//! for loom to check, so there is no `cfg(loom)` variant and no loom model;
//! the std types are used under every configuration, which also keeps the
//! crate usable from other crates' loom models.

pub(crate) use std::sync::Arc;
pub(crate) use std::sync::atomic::{AtomicU64, Ordering};
