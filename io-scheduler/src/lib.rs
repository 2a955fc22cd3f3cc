//! `io_scheduler`: a fair I/O queue per device, as Seastar's I/O scheduler
//! keeps one for ScyllaDB. Every request belongs to a class with shares
//! (the commit log, memtable flushes, compaction, reads); the queue lets
//! requests go in order of the device time each class has used per share,
//! and only as fast as the device's capacity allows, with at most a
//! bounded amount of device time in flight. So queues form here, where
//! they can be reordered, not in the device; under backlog each class gets
//! device time in proportion to its shares; a class of few shares still
//! progresses; and a request of a high-share class waits for at most the
//! dispatch bound once it is next.
//!
//! * [`Capacity`]: a device's bandwidth and operation rates for reads and
//!   writes, and so each request's cost in device time.
//! * [`FairQueue`]: the decisions alone, with no threads and no clock, for
//!   simulations and for callers with their own event loop.
//! * [`IoQueue`]: the queue with threads around it: [`IoQueue::submit`]
//!   blocks until the request may go and returns a [`Permit`], dropped
//!   when the I/O is done. Shares change at run time
//!   ([`IoQueue::set_shares`]), for the flush and compaction controllers.
//! * [`SharesCurve`]: the piecewise-linear map from a backlog to shares
//!   those controllers follow ([`SharesCurve::flush`] is ScyllaDB's flush
//!   controller).
//!
//! ```
//! use std::sync::Arc;
//!
//! use device::{Clock, SystemClock};
//! use io_scheduler::{Capacity, IoQueue, Kind, QueueConfig};
//!
//! let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
//! let disk = IoQueue::new("disk", QueueConfig::new(Capacity::bandwidth(1 << 30)), clock)?;
//! let commitlog = disk.add_class("commitlog", 1000)?;
//! let compaction = disk.add_class("compaction", 100)?;
//!
//! let permit = disk.submit(commitlog, Kind::Write, 128 << 10)?;
//! // ... write the 128 KiB ...
//! drop(permit);
//!
//! // The compaction controller raises compaction's shares with its backlog.
//! disk.set_shares(compaction, 400)?;
//! let stats = disk.stats();
//! assert_eq!(stats.classes[0].bytes_written, 128 << 10);
//! assert_eq!(stats.classes[1].shares, 400);
//! # Ok::<(), io_scheduler::Error>(())
//! ```
//!
//! The queue does no I/O itself and knows no files: the file layer asks it
//! before each call (issue 37's `fs` crate is where that hook goes).

mod capacity;
mod curve;
mod error;
mod fair_queue;
mod histogram;
mod queue;
mod sync;

#[cfg(all(test, loom))]
mod loom_tests;

pub use capacity::{Capacity, Kind};
pub use curve::SharesCurve;
pub use error::Error;
pub use fair_queue::{ClassId, ClassStats, Dispatched, FairQueue, MAX_CLASSES, QueueConfig};
pub use queue::{IoQueue, Permit, QueueStats};
