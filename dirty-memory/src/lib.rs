//! `dirty-memory` decides *when* memtables are flushed and *which* one, and
//! holds writers back when memory runs short.
//!
//! A [`DirtyMemoryManager`] owns a [`RegionGroup`](region_group::RegionGroup)
//! that the memtables' regions join. From a budget it derives three limits
//! ([`limits_for_budget`]): the *real* hard limit (the budget), the
//! *unspooled* hard limit (half of it; writers wait above it) and the
//! unspooled soft limit (a quarter of it by default; flushing starts above
//! it). Its flush loop, on a thread of its own, waits until unspooled usage
//! exceeds the soft limit, takes the single data-write permit, and asks the
//! memtables' owner, through [`FlushTarget`], to flush the largest memtable
//! that can be flushed. The owner reports progress through a [`Flush`]
//! handle: memtable bytes written count as *spooled* (virtual dirty), which
//! lowers unspooled usage and lets held writers in at disk speed; the
//! permit is released as soon as the data is written, before the flush's
//! tail work. [`FlushPolicy`] also offers the policy this one replaced
//! (per-memtable size limit, concurrent flushes) so both can be compared in
//! one run.
//!
//! # Who owns what on the flush path
//!
//! * **`dirty-memory` (this crate) owns the policy**: when and what to
//!   flush, the data-write permit, spooled accounting
//!   ([`Flush::account_written`], in bytes of region memory), retries of
//!   transient failures with a doubling back-off, permanent failures set
//!   aside and reported once ([`FlushTarget::flush_failed_permanently`]),
//!   coalescing of explicit requests, and the one completion callers wait
//!   on ([`FlushCompletion`]), all keyed by the memtable's region
//!   ([`RegionId`](region_group::RegionId)). It is the only layer that retries.
//! * **`flush-scheduler` only executes**: its data workers run data phases
//!   only (so the permit holder never waits behind tail work), its tail
//!   workers run the rest; it picks flush directories, catches panics and
//!   hands unfinished jobs back at shutdown. It has no key, retry,
//!   coalescing or progress channel of its own.
//! * **`replica` wires them**: its [`FlushTarget`] seals the memtable and
//!   submits a job carrying the [`Flush`]; the job streams the memtable into
//!   an sstable writer, calls [`Flush::account_written`] as it goes and
//!   [`Flush::data_written`] before the tail work (index, fsync, rename),
//!   then [`finish`](Flush::finish_releasing)es the flush or
//!   [`fail`](Flush::fail)s it (transient) or
//!   [`fail_permanently`](Flush::fail_permanently) (data the format cannot
//!   hold). A memtable is never dropped unflushed: a failed flush leaves it
//!   in its region. `mutation::limits` keeps data the sstable cannot write
//!   out of memtables in the first place.
//!
//! Explicit flushes ([`DirtyMemoryManager::request_flush`]) go before
//! pressure flushes and coalesce per memtable into one shared
//! [`FlushCompletion`]; [`DirtyMemoryConfig::system_tables`] configures a
//! separate, small manager so system writes never queue behind user writes;
//! [`DirtyMemoryManager::metrics`] reports real and unspooled dirty memory,
//! flush counts and bytes, blocked writers and the current flush.
//! [`LoopMode::Manual`] runs the loop's decisions on the caller's thread,
//! for deterministic simulations such as the `flush_policy` benchmark.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! use dirty_memory::{DirtyMemoryConfig, DirtyMemoryManager, Error, Flush, FlushTarget, LoopMode};
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
//!
//!     fn flush_failed_permanently(&self, region: RegionId, error: &Error) {
//!         unreachable!("an instant disk never fails ({region}: {error})");
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
//!
//! # Wiring with `flush-scheduler`
//!
//! How `replica` composes the two crates: the target submits a two-phase
//! job that owns the [`Flush`]; the data phase accounts progress and
//! releases the permit, the tail phase runs on a tail worker, and
//! `complete` ends the flush, classifying a failure. Shut the manager down
//! first (it waits for the flushes in flight, which need the executor),
//! then the scheduler.
//!
//! ```
//! use std::sync::Arc;
//!
//! use dirty_memory::{DirtyMemoryConfig, DirtyMemoryManager, Error, Flush, FlushTarget};
//! use flush_scheduler::{FlushContext, FlushJob, FlushScheduler, SchedulerConfig};
//! use region_group::{RegionId, RegionListener};
//!
//! /// replica's table: seals the memtable and runs its flush on the scheduler.
//! struct Table {
//!     scheduler: Arc<FlushScheduler>,
//! }
//!
//! impl FlushTarget for Table {
//!     fn start_flush(&self, flush: Flush) {
//!         flush.group().ground_evictable(flush.region()); // sealed: writes go to a new memtable
//!         // After shutdown the job comes back; dropping it drops the `Flush`,
//!         // which fails the flush and keeps the memtable.
//!         let _ = self.scheduler.submit(Box::new(FlushMemtable { flush, unwritable: None }));
//!     }
//!
//!     fn flush_failed_permanently(&self, region: RegionId, error: &Error) {
//!         eprintln!("memtable {region} kept in memory, cannot be flushed: {error}");
//!     }
//! }
//!
//! /// One memtable's flush, as a flush-scheduler job.
//! struct FlushMemtable {
//!     flush: Flush,
//!     /// Set when the sstable writer refuses the data (`sstable::Error::TooLarge`):
//!     /// a permanent failure, not worth retrying.
//!     unwritable: Option<String>,
//! }
//!
//! impl FlushJob for FlushMemtable {
//!     fn write_data(&mut self, _ctx: &FlushContext<'_>) -> Result<(), flush_scheduler::Error> {
//!         // Stream the memtable into an sstable writer in `ctx.dir()`. After
//!         // each piece, report the memtable memory it covered (here: four
//!         // equal pieces of the region).
//!         let size = self.flush.group().region_size(self.flush.region()).map_or(0, |s| s.0);
//!         for _ in 0..4 {
//!             self.flush.account_written(size / 4);
//!         }
//!         self.flush.account_written(usize::MAX); // the rest: the data is all written
//!         self.flush.data_written(); // the next memtable may start writing data
//!         Ok(())
//!     }
//!
//!     fn write_tail(&mut self, _ctx: &FlushContext<'_>) -> Result<(), flush_scheduler::Error> {
//!         Ok(()) // index, summary, fsync, the atomic rename of the TOC
//!     }
//!
//!     fn complete(self: Box<Self>, outcome: Result<(), flush_scheduler::Error>) {
//!         let FlushMemtable { flush, unwritable } = *self;
//!         match (outcome, unwritable) {
//!             (Ok(()), _) => {
//!                 let (group, region) = (Arc::clone(flush.group()), flush.region());
//!                 let size = group.region_size(region).map_or(0, |s| s.0);
//!                 flush.finish_releasing(|| group.del(region, size)); // the memtable goes
//!             }
//!             (Err(e), Some(_)) => flush.fail_permanently(e),
//!             (Err(e), None) => flush.fail(e), // I/O: retried after a back-off
//!         }
//!     }
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let scheduler = Arc::new(FlushScheduler::new(SchedulerConfig::new([dir.path()]))?);
//! let table = Arc::new(Table { scheduler: Arc::clone(&scheduler) });
//! let manager = DirtyMemoryManager::new(DirtyMemoryConfig::new("user", 1 << 20), table)?;
//! let memtable = RegionId::from_raw(1);
//! manager.group().add(memtable, 0);
//! manager.group().increase_usage(memtable, 100 << 10);
//! manager.request_flush(memtable)?.wait()?; // flushed through both crates
//! assert_eq!(manager.metrics().real_dirty, 0);
//! manager.shutdown(); // first the policy (waits for flushes in flight) ...
//! assert!(scheduler.shutdown().is_empty()); // ... then the executor
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
pub use config::{
    DEFAULT_IDLE_BACKOFF, DEFAULT_MAX_FLUSHES_IN_FLIGHT, DEFAULT_RETRY_BACKOFF_MAX,
    DEFAULT_RETRY_BACKOFF_MIN, DEFAULT_SOFT_LIMIT_RATIO, DirtyMemoryConfig, FlushPolicy, Limits,
    LoopMode, MAX_SOFT_LIMIT_RATIO, MIN_BUDGET, SYSTEM_TABLES_BUDGET,
    SYSTEM_TABLES_SOFT_LIMIT_RATIO, limits_for_budget,
};
pub use error::{Error, FlushFailure};
pub use flush::{Flush, FlushReason, FlushTarget, Subject};
pub use manager::{DirtyMemoryManager, WhenAdmitted};
pub use metrics::DirtyMemoryMetrics;
