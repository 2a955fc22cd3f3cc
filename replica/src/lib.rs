//! `replica`: composes memtables, the dirty-memory manager, the flush
//! scheduler and sstables behind a small Database/Table API, and ships the
//! `replica-stress` load generator.
//!
//! **Not built yet: the `Database` and the `replica-stress` program.** The
//! write path they compose (the memtable crate, the reshaped dirty-memory
//! manager and flush scheduler, the workspace sync facade) is still being
//! built in the crates below. This crate ships no binary yet, and
//! `cargo xtask stress` says so rather than running a placeholder.
//!
//! What is here is the groundwork both will use unchanged:
//!
//! * [`DatabaseConfig`]: directories, dirty-memory budgets, soft-limit
//!   ratio, [`FlushPolicy`], sstable writer options, flush bandwidth limit,
//!   with validation.
//! * [`Catalog`]: which tables exist ([`TableSchema`]), persisted
//!   atomically with a checksum so they survive a reopen.
//! * [`open_table_dirs`]: each table's sstables in its data and flush
//!   directories, after removing the leftovers of unfinished flushes.
//! * [`DirectoryLock`]: the lock file that refuses a second open of the
//!   same directories, from this process or another.
//! * [`TokenBucket`]: the flush bandwidth limit, blocking writers on an
//!   injected [`Clock`] ([`ManualClock`] in tests, so they never sleep).
//! * [`units`]: parsing of sizes, counts and durations with clear errors.
//! * `stress` (feature `stress`, on by default): the load generator's
//!   engine, minus the database calls.
//!
//! ```
//! use replica::{DatabaseConfig, units};
//!
//! let mut config = DatabaseConfig::new("/var/lib/replica");
//! config.dirty_memory_budget = units::parse_size("budget", "512MiB")? as usize;
//! config.flush_bandwidth_limit = Some(units::parse_size("bandwidth", "64MiB")?);
//! config.validate()?;
//! # Ok::<(), replica::Error>(())
//! ```
#![forbid(unsafe_code)]

mod catalog;
mod config;
mod database;
mod error;
mod layout;
mod lock;
#[cfg(feature = "stress")]
pub mod stress;
mod sync;
mod throttle;
pub mod units;

pub use catalog::{
    CATALOG_FILE_NAME, Catalog, MAX_TABLE_NAME_LEN, MAX_TABLES, TableOptions, TableSchema,
    validate_table_name,
};
pub use config::{
    DEFAULT_BUDGET, DEFAULT_SOFT_LIMIT_RATIO, DEFAULT_SYSTEM_BUDGET, DEFAULT_WRITE_TIMEOUT,
    DatabaseConfig, FlushPolicy, MIN_BUDGET, check_soft_limit_ratio,
};
pub use database::{Database, DatabaseMetrics, TableMetrics, TableReader};
pub use error::{Error, Result};
pub use layout::{
    SstableId, TableFiles, open_table_dirs, orphan_table_dirs, remove_table_dirs, table_dir,
};
pub use lock::{DirectoryLock, LOCK_FILE_NAME};
pub use throttle::{Clock, ManualClock, SystemClock, TokenBucket, WriteThrottle};
