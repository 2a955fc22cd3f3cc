//! `compaction`: compaction of a table's sstables. It picks jobs from the
//! table's sstable set ([`Strategy`]: [`SizeTiered`], [`Incremental`],
//! [`NoCompaction`], and major compactions on demand), merges their inputs
//! through `mutation`'s merging reader, drops the tombstones that can no
//! longer shadow anything anywhere ([`MaxPurgeable`]), writes the outputs
//! through `sstable::Writer`, and swaps inputs for outputs in one step
//! ([`SstableSet::replace`]), crash-safely ([`recover`]). A
//! [`CompactionManager`] runs jobs on its own workers with a bandwidth
//! share that grows with the backlog.
//!
//! It knows sstables and mutations, not memtables: the owner (the replica)
//! supplies what its memtables hold through [`CompactionTable`].
//!
//! ```
//! use std::time::Duration;
//! use compaction::{JobOptions, SizeTiered, SstableSet, Strategy, Unthrottled, run_job};
//! use compaction::mutation::{Cell, DecoratedKey, Mutation, Timestamp};
//! use compaction::sstable::{Writer, WriterOptions};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let set = SstableSet::open(dir.path())?;
//! let key = DecoratedKey::from_bytes("user:42")?;
//! // Four flushes overwrite the same cell.
//! for ts in 1..=4 {
//!     let m = Mutation::builder(key.clone())
//!         .cell("row", 0, Cell::live(format!("v{ts}"), Timestamp::from_micros(ts)))
//!         .build()?;
//!     let mut w = Writer::create(dir.path(), WriterOptions::default())?;
//!     for f in m.fragments() {
//!         w.write(&f)?;
//!     }
//!     let committed = w.commit()?;
//!     set.add(compaction::sstable::Sstable::open(dir.path(), committed.generation)?);
//! }
//! let stcs = SizeTiered::default();
//! let plan = stcs.next_job(&set.snapshot().infos()).expect("four similar sstables");
//! let mut options = JobOptions::default();
//! options.gc_grace = Duration::ZERO;
//! let report = run_job(&set, &plan, &options, &compaction::NothingOutside, &Unthrottled)?;
//! assert_eq!(report.inputs.len(), 4);
//! let snapshot = set.snapshot();
//! assert_eq!(snapshot.len(), 1);
//! let merged = snapshot.handles()[0].sstable().read_partition(&key)?.expect("the key");
//! let latest = Mutation::builder(key.clone())
//!     .cell("row", 0, Cell::live("v4", Timestamp::from_micros(4)))
//!     .build()?;
//! assert_eq!(merged, latest.fragments());
//! # Ok(())
//! # }
//! ```
//!
//! # Replacement and crash safety
//!
//! A set may span several directories ([`SstableSet::open_dirs`]): its
//! data directory, where compactions write their outputs, and others
//! whose sstables it holds too (a table's separate flush directories);
//! compactions read inputs wherever they are, so flushes keep their own
//! directories and compactions run on the data directory. Each job keeps
//! a transaction file in the data directory (see the `txn` records in the
//! crate README): its inputs, each output before it is written, and
//! checkpoints (outputs kept, inputs replaced). At open,
//! [`SstableSet::open_dirs`] calls [`recover_dirs`], which removes outputs
//! not kept (roll back) and inputs replaced (roll forward), in whichever
//! of the directories they are. Run membership of incremental outputs is
//! kept in `run-<generation>.txt` files next to the sstables; the sstable
//! format is unchanged.
//!
//! # Features
//!
//! `testing` adds `JobOptions::stop_after`, which stops a job after a
//! chosen step of the replacement as a crash would, for crash tests.
#![forbid(unsafe_code)]

mod error;
mod files;
mod job;
mod manager;
mod pool;
mod purge;
mod run_reader;
mod set;
mod strategy;
mod sync;
mod txn;

/// The device model a set's sstables are opened on
/// ([`SstableSet::open_on`]). Re-exported, as are `mutation` and `sstable`,
/// so that one dependency line is enough.
pub use device;
pub use error::{Error, Result};
pub use job::{JobControl, JobOptions, JobReport, PendingTransaction, Unthrottled, run_job};
pub use manager::{
    BacklogController, CompactionManager, CompactionMetrics, CompactionTable, ManagerConfig,
    TABLE_STOP_POLL,
};
/// The data model: keys and timestamps of [`MaxPurgeable`], the merged
/// fragment streams.
pub use mutation;
pub use purge::{Clock, ManualClock, MaxPurgeable, NothingOutside, PurgeCounts, SystemClock};
pub use set::{RunMembership, SetSnapshot, SstableHandle, SstableInfo, SstableSet};
/// The sstables a set holds and a job writes.
pub use sstable;
pub use strategy::{
    Incremental, IncrementalOptions, JobPlan, NoCompaction, SizeTiered, SizeTieredOptions,
    Strategy, StrategyConfig,
};
pub use txn::{RecoveryReport, recover, recover_dirs, recover_dirs_with};

// The README's example runs as a doc test, so it cannot go stale.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
