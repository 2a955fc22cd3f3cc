//! The crate's one door to shared-state primitives.
//!
//! Nothing here coordinates threads: an open sstable is immutable and
//! shared by its readers through [`Arc`], and the only shared mutable state
//! is a `Relaxed` diagnostic counter of blocks read. There is no protocol
//! for loom to check, so the crate takes the `std` types that the
//! workspace's `sync` facade keeps in every build (`sync::plain`), which
//! also keeps the crate usable from other crates' loom models.

pub(crate) use ::sync::plain::{Arc, AtomicU64, Ordering};
