//! `dirty-memory` decides *when* memtables are flushed and *which* one, and
//! holds writers back when memory runs short.
//!
//! A [`DirtyMemoryManager`] owns a [`RegionGroup`](region_group::RegionGroup)
//! that the memtables' regions join. From a budget it derives three limits:
//! the *real* hard limit (the budget), the *unspooled* hard limit (half of
//! it; writers wait above it) and the unspooled soft limit (a quarter of it
//! by default; flushing starts above it). Its flush loop, on a thread of its
//! own, waits until unspooled usage exceeds the soft limit, takes the single
//! data-write permit, and asks the memtables' owner, through
//! [`FlushTarget`], to flush the largest memtable that can be flushed. The
//! owner reports progress through a [`Flush`] handle: bytes written count as
//! *spooled* (virtual dirty), which lowers unspooled usage and lets held
//! writers in at disk speed; the permit is released as soon as the data is
//! written, before the flush's tail work. [`FlushPolicy`] also offers the
//! policy this one replaced (per-memtable size limit, concurrent flushes) so
//! both can be compared in one run.
//!
//! Explicit flushes ([`DirtyMemoryManager::request_flush`]) go before
//! pressure flushes and coalesce per memtable into one shared
//! [`FlushCompletion`]; failed flushes keep their memtable and are retried
//! with a doubling back-off; [`DirtyMemoryConfig::system_tables`] configures
//! a separate, small manager so system writes never queue behind user
//! writes; [`DirtyMemoryManager::metrics`] reports real and unspooled dirty
//! memory, flush counts and bytes, blocked writers and the current flush.
//! [`LoopMode::Manual`] runs the loop's decisions on the caller's thread, for
//! deterministic simulations such as the `flush_policy` benchmark.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! use dirty_memory::{DirtyMemoryConfig, DirtyMemoryManager, Flush, FlushTarget, LoopMode};
//! use region_group::{RegionId, RegionListener};
//!
//! /// A memtable owner whose "disk" writes a memtable at once.
//! struct InstantDisk;
//! impl FlushTarget for InstantDisk {
//!     fn start_flush(&self, mut flush: Flush) {
//!         let (group, region) = (Arc::clone(flush.group()), flush.region());
//!         group.ground_evictable(region); // seal the memtable
//!         let size = flush.account_written(usize::MAX); // all of it, as spooled
//!         flush.data_written(); // the next flush may start
//!         flush.finish_releasing(|| group.del(region, size)); // drop the memtable
//!     }
//! }
//!
//! # fn main() -> Result<(), dirty_memory::Error> {
//! // Budget 1 MiB: soft limit 256 KiB, unspooled hard 512 KiB, real hard 1 MiB.
//! let mut config = DirtyMemoryConfig::new("user", 1 << 20);
//! // Run the flush loop's decisions on this thread, to show them one by one
//! // (the default, `LoopMode::BackgroundThread`, runs them on a thread).
//! config.loop_mode = LoopMode::Manual;
//! let manager = DirtyMemoryManager::new(config, Arc::new(InstantDisk))?;
//! let memtable = RegionId::from_raw(1);
//! manager.group().add(memtable, 0);
//! let write = || manager.group().increase_usage(memtable, 64 << 10);
//! for _ in 0..4 {
//!     manager.run_when_memory_available(write, Some(Duration::from_secs(1)))?;
//! }
//! assert_eq!(manager.poll_flushes()?, 0); // 256 KiB: at the soft limit, no flush
//! manager.run_when_memory_available(write, Some(Duration::from_secs(1)))?;
//! assert_eq!(manager.poll_flushes()?, 1); // above it: the largest memtable
//! let metrics = manager.metrics();
//! assert_eq!((metrics.flushes_completed, metrics.real_dirty), (1, 0));
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]

mod completion;
mod config;
mod error;
mod flush;
#[cfg(all(test, loom))]
mod loom_tests;
mod manager;
mod metrics;
mod sync;

pub use completion::FlushCompletion;
pub use config::{DirtyMemoryConfig, FlushPolicy, Limits, LoopMode, MIN_BUDGET};
pub use error::{Error, FlushFailure};
pub use flush::{Flush, FlushReason, FlushTarget};
pub use manager::DirtyMemoryManager;
pub use metrics::DirtyMemoryMetrics;
