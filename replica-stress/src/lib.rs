//! `replica_stress`: the load generator of the workspace, a
//! cassandra-stress-like write, read or mixed load against an embedded
//! [`replica::Database`] (or any other [`Target`]), reported the way
//! cassandra-stress reports. The `replica-stress` program is `main`
//! around [`execute`] with a [`DatabaseFactory`]; this library is its
//! engine, on the database's public API only, so the database carries no
//! command line, no reporting and no feature for it.
//!
//! A short write load on a database in a temporary directory (removed
//! after the run), with its summary printed to `out`:
//!
//! ```
//! use clap::Parser;
//! use replica_stress::{DatabaseFactory, StressOptions, execute};
//!
//! let options = StressOptions::try_parse_from([
//!     "replica-stress", "--threads=2", "--ops=2000", "--partitions=200",
//!     "--partition-size=1KiB", "--budget=16MiB", "--commitlog=off", "--prefault=off",
//! ])?;
//! let mut out = Vec::new();
//! let summaries = execute(&options, &mut DatabaseFactory::new(&options), &mut out)?;
//! assert_eq!(summaries[0].counts.ops, 2000);
//! assert_eq!(summaries[0].counts.errors, 0);
//! assert!(String::from_utf8(out)?.contains("Op rate"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What is here
//!
//! Its options ([`StressOptions`]), the deterministic workload
//! ([`OpGenerator`]), the runner that drives any [`Target`] ([`run`]),
//! per-thread latency histograms merged every interval
//! ([`IntervalReport`]), the progress line ([`ProgressPrinter`]), the
//! process's memory ([`MemoryProbe`]: peak resident set and, where the
//! program counts, live heap), and the reports: cassandra-stress's summary
//! ([`Summary`]), JSON ([`write_json`]), HdrHistogram interval logs
//! ([`HdrLog`]), the run drawn in an HTML file ([`GraphRecorder`], [`write_graph`]) and side-by-side comparison ([`compare`]); the program
//! itself, one run or a `--compare` pair, given a [`TargetFactory`]
//! ([`execute`]), and where each run keeps its files ([`RunDirs`]);
//! [`Target`] for [`replica::Database`] and the [`DatabaseFactory`] that
//! opens one per run; [`units`], the parsing of sizes, counts and
//! durations; YCSB's key choosers ([`zipfian`]); the LRU bound of a
//! cache's hit ratio over a trace of the keys read ([`LruSimulator`]);
//! and the crate's [`Error`].
//!
//! The runner is also exercised against in-memory test targets
//! (`tests/stress_runner.rs`); an [`Interrupt`] stops a run early, as the
//! program's SIGINT and SIGTERM handler does.
#![forbid(unsafe_code)]

mod async_client;
mod compaction;
mod database;
mod dirs;
mod error;
mod graph;
mod hdr_log;
mod interrupt;
mod latency;
mod lru;
mod memory;
mod options;
mod program;
mod progress;
mod rate_table;
mod runner;
mod summary;
mod sync;
mod target;
pub mod units;
mod workload;
pub mod zipfian;

pub use compaction::{CompactionFigures, parse_compaction, parse_flush_throttle, strategy_name};
pub use database::DatabaseFactory;
pub use dirs::RunDirs;
pub use error::{Error, Result};
pub use graph::{GraphRecorder, read_graph, write_graph};
pub use hdr_log::HdrLog;
pub use interrupt::Interrupt;
pub use latency::{Counts, IntervalReport, LATENCY_UNIT};
pub use lru::{LruSimulator, interleave_traces};
pub use memory::{HeapCounter, HeapFigures, MemoryProbe, ProcessMemory, parse_status};
pub use options::{
    DEFAULT_DURATION, DEFAULT_WRITE_PARTITIONS, DISK_RESERVE, DeviceArg, Distribution,
    FLUSH_BANDWIDTH_DEVICE, FlushPolicyChoice, MAX_ASYNC_IN_FLIGHT, MAX_COLUMNS,
    MAX_MACHINE_BUDGET, MAX_PARTITION_SIZE, MAX_ROW_SIZE, MAX_TABLES, MAX_THREADS,
    MIN_MACHINE_BUDGET, Mode, Populate, Ratio, StopCondition, StressOptions, WorkloadSpec,
    budget_for_memory, check_disk_space, default_partitions, machine_budget,
};
pub use program::{TargetFactory, describe_devices, execute, hdr_log_path, policies};
pub use progress::{PROGRESS_HEADER, PROGRESS_LEGEND, ProgressPrinter, progress_line};
pub use rate_table::RateTable;
pub use runner::{Observer, Observers, PopulateReport, RunConfig, error_chain, populate, run};
pub use summary::{Figure, LatencySummary, Summary, compare, compare_json, write_json};
pub use target::{LogRoomWaits, Target, TargetStats};
pub use workload::{Op, OpGenerator, ValuePool, partition_key, table_name};

// The README's example runs as a doc test, so it cannot go stale.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
