//! `device`: a model of storage devices. A [`Device`] is a name and a
//! bandwidth in bytes per second (a [`TokenBucket`]); every byte the
//! replica reads or writes through its sstable writers and readers, its
//! compactions and its commit log is charged to the device its directory
//! is on, before the I/O, and the charging thread blocks until the bytes
//! fit the rate. Everything on one device shares its bandwidth; each
//! device counts bytes read, bytes written, and the time chargers waited
//! ([`DeviceStats`]), so a run can say which device was the limit.
//!
//! With no model (`None` where a device is asked for) nothing is charged
//! or throttled: the real disk is the only limit.
//!
//! # Where the bucket lives, and why here
//!
//! The crates that do the I/O (`sstable`: writers, readers, and through
//! them compaction; `commitlog`) take an `Option<Arc<Device>>` in their
//! options and charge it at the one place each writes or reads a file:
//! the sstable writer before each buffer goes to a file, the sstable
//! reader before each positional read, the commit log before each chunk
//! is written. So no byte can reach a file uncharged, and the charge
//! happens in the thread doing the I/O, outside every lock other writers
//! need (the commit log charges inside the stretch where it has released
//! its state lock for the write). A small crate below both keeps them
//! free of the replica (which maps directories to devices) and of each
//! other; a trait object in their options would do the same at the cost
//! of a virtual call and of a counter type every implementor re-invents,
//! and an I/O wrapper (a `File`-like type) would have to wrap
//! `BufWriter`, positional reads and the commit log's own storage trait
//! separately, for the same two calls.
//!
//! Reads are charged whether or not the page cache would have served
//! them: the model is a disk read without a cache (as ScyllaDB's O_DIRECT
//! reads are), so a read-heavy run's reads cost device time. An operation
//! rate is not modelled: the replica's I/O is in large sequential buffers
//! (1 MiB sstable write buffers, commit-log chunks) and block-sized reads,
//! so bandwidth is what binds.
//!
//! # Time
//!
//! The clock is injected ([`Clock`]): [`SystemClock`] in production,
//! [`ManualClock`] in tests, which moves only when the test advances it,
//! so tests of throttled code never sleep. The bucket's state is one
//! lock-guarded arrival time and `Relaxed` counters, no other shared
//! state; its concurrency is tested with threads on the manual clock.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use device::{Clock, Device, ManualClock};
//!
//! let clock = Arc::new(ManualClock::new());
//! let as_dyn: Arc<dyn Clock> = clock.clone();
//! // 1 MiB/s with a 64 KiB burst.
//! let disk = Device::with_clock("disk", 1 << 20, 64 << 10, as_dyn)?;
//! assert_eq!(disk.charge_write(64 << 10), Duration::ZERO); // the burst
//! // Another 64 KiB waits 1/16 s for the rate: a thread would block.
//! assert_eq!(disk.ready_at(64 << 10), Duration::from_micros(62_500));
//! clock.advance(Duration::from_micros(62_500));
//! assert_eq!(disk.charge_read(64 << 10), Duration::ZERO);
//! let stats = disk.stats();
//! assert_eq!((stats.bytes_written, stats.bytes_read), (64 << 10, 64 << 10));
//! # Ok::<(), device::Error>(())
//! ```
#![forbid(unsafe_code)]

mod bucket;
mod clock;
mod device;
mod error;
mod sync;

pub use bucket::TokenBucket;
pub use clock::{Clock, ManualClock, SystemClock};
pub use device::{Device, DeviceStats, MAX_NAME_LEN, charge_read, charge_write, default_burst};
pub use error::Error;

// The README's example runs as a doc test, so it cannot go stale.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
