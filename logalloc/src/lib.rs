//! A log-structured allocator (work in progress): this crate currently
//! exposes only the [`RegionListener`] interface that regions report their
//! usage through.

mod listener;

pub use listener::{RegionId, RegionListener};
