//! Region groups: sum the memory of a set of logalloc regions and turn that
//! sum into decisions. A [`RegionGroup`] starts reclaiming (flushing) at a
//! soft limit, makes writers wait at a hard limit and releases them in FIFO
//! order when memory comes back, and always knows its largest region. This
//! is the layer ScyllaDB's dirty-memory manager is built on.
//!
//! The group knows regions only through logalloc's [`RegionListener`]
//! interface, which it implements: every segment a region takes or releases,
//! every growth or shrinking of its handle table and slot lists, every add,
//! remove, merge and grounding is reported to it, without polling.
//!
//! * **Two counters.** *Real* usage is the regions' footprint: the bytes of
//!   segments held plus their handle tables and slot lists;
//!   *unspooled* usage is real minus the bytes a flush declared already
//!   written out ([`RegionGroup::account_region_spooled`], which ties them
//!   to the flushed region so they shrink and leave with it, or
//!   [`RegionGroup::account_spooled`] for the group as a whole). A region
//!   leaving the group can leave its bytes behind in real usage, pinned
//!   ([`RegionGroup::pin_on_leave`]) until the owner releases them piece by
//!   piece, as a flushed memtable moving into a cache does.
//! * **Soft limit.** Crossing above it calls `start_reclaiming`, crossing
//!   back to or below it calls `stop_reclaiming`, once per crossing, in
//!   order, with no lock held ([`ReclaimConfig`]).
//! * **Hard limits.** [`RegionGroup::run_when_memory_available`] (blocking)
//!   and [`RegionGroup::run_when_memory_available_async`] (a runtime-agnostic
//!   future) run a request at once when nothing is queued and usage is within
//!   the unspooled and real hard limits, and otherwise queue it FIFO,
//!   admitting one request per memory check.
//! * **Largest region.** [`RegionGroup::largest_region`] and
//!   [`RegionGroup::largest_flushable_region`] read an ordered tree kept up to
//!   date on every size change; a grounded region orders as size 0.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use std::time::Duration;
//!
//! use region_group::logalloc::{RegionId, RegionListener};
//! use region_group::{Error, ReclaimConfig, RegionGroup};
//!
//! let starts = Arc::new(AtomicUsize::new(0));
//! let counter = starts.clone();
//! let group = RegionGroup::new(
//!     "memtables",
//!     ReclaimConfig {
//!         unspooled_hard_limit: 64 << 10,
//!         unspooled_soft_limit: 32 << 10,
//!         start_reclaiming: Some(Arc::new(move || {
//!             counter.fetch_add(1, Ordering::SeqCst);
//!         })),
//!         ..Default::default()
//!     },
//! );
//!
//! // A region reports its footprint (logalloc does this for a listening region).
//! let (small, big) = (RegionId::from_raw(1), RegionId::from_raw(2));
//! group.add(small, 8 << 10);
//! group.add(big, 40 << 10);
//! assert_eq!(starts.load(Ordering::SeqCst), 1); // 48 KiB > 32 KiB soft limit
//! assert_eq!(group.largest_region(), Some(big));
//!
//! // Within the 64 KiB hard limit: the write runs at once.
//! assert_eq!(group.run_when_memory_available(|| "written", None), Ok("written"));
//!
//! // Over it: a write waits, here at most 1 ms, and the error names the group.
//! group.increase_usage(big, 32 << 10);
//! let err = group.run_when_memory_available(|| (), Some(Duration::from_millis(1))).unwrap_err();
//! assert_eq!(err, Error::Timeout { group: "memtables".into() });
//!
//! // A flush writes the big region out; unspooled usage falls, writers run.
//! group.account_spooled(40 << 10)?;
//! assert_eq!(group.unspooled_usage(), 40 << 10);
//! assert_eq!(group.run_when_memory_available(|| 1, None), Ok(1));
//! # Ok::<(), Error>(())
//! ```
//!
//! With real logalloc regions, a [`SizeTrackedRegion`] listens from birth:
//!
//! ```
//! use region_group::logalloc::{PoolConfig, SegmentPool};
//! use region_group::{ReclaimConfig, RegionGroup, SizeTrackedRegion};
//!
//! let pool = SegmentPool::new(PoolConfig::default().with_memory_limit(16 << 20)).unwrap();
//! let group = RegionGroup::new("memtables", ReclaimConfig::default());
//! let mut memtable = SizeTrackedRegion::new(&group, &pool);
//! let handle = memtable.alloc(100, 8).unwrap(); // takes a segment, starts a table
//! assert_eq!(group.real_usage(), memtable.stats().footprint_bytes());
//! assert_eq!(group.largest_flushable_region(), Some(memtable.id()));
//!
//! memtable.ground_evictable_occupancy(); // sealed for flush: never picked again
//! assert_eq!(group.largest_flushable_region(), None);
//! memtable.free(handle).unwrap();
//! drop(memtable); // the region leaves the group
//! assert_eq!(group.real_usage(), 0);
//! ```

// `deny`, not `forbid`: the only unsafe code is what intrusive-collections'
// `intrusive_adapter!` generates (and allows) for the region tree's adapter.
#![deny(unsafe_code)]

mod admission;
mod config;
mod error;
mod group;
#[cfg(all(test, loom))]
mod loom_tests;
mod size_tracked;
mod sync;
mod timer;
mod tracker;
mod waiter;

pub use admission::WhenMemoryAvailable;
pub use config::{Limits, ReclaimCallback, ReclaimConfig};
pub use error::Error;
pub use group::{GroupMetrics, RealPin, RegionGroup};
/// The allocator whose regions a group sums: [`SizeTrackedRegion::new`]
/// takes its [`SegmentPool`](logalloc::SegmentPool), and regions report
/// their [`RegionStats`](logalloc::RegionStats) and
/// [`Handle`](logalloc::Handle)s from it. Re-exported so that one
/// dependency line is enough.
pub use logalloc;
pub use logalloc::{RegionId, RegionListener};
pub use size_tracked::SizeTrackedRegion;

// The README's example runs as a doc test, so it cannot go stale.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
