//! The engine of `replica-stress`, the load generator: its options
//! ([`StressOptions`]), the deterministic workload ([`OpGenerator`]), the
//! runner that drives any [`Target`] ([`run`]), per-thread latency
//! histograms merged every interval ([`IntervalReport`]), the progress
//! line ([`ProgressPrinter`]), the process's memory ([`MemoryProbe`]:
//! peak resident set and, where the program counts, live heap), and the reports: cassandra-stress's summary
//! ([`Summary`]), JSON ([`write_json`]), HdrHistogram interval logs
//! ([`HdrLog`]) and side-by-side comparison ([`compare`]); and the program
//! itself, one run or a `--compare` pair, given a [`TargetFactory`]
//! ([`execute`]), and where each run keeps its files ([`RunDirs`]).
//!
//! The `Database` will implement [`Target`]; until then the runner is
//! exercised against test targets (`tests/stress_runner.rs`).

mod async_client;
mod compaction;
mod dirs;
mod hdr_log;
mod latency;
mod memory;
mod options;
mod program;
mod progress;
mod rate_table;
mod runner;
mod summary;
mod target;
mod workload;

pub use crate::database::DatabaseFactory;
pub use compaction::{CompactionFigures, parse_compaction, strategy_name};
pub use dirs::RunDirs;
pub use hdr_log::HdrLog;
pub use latency::{Counts, IntervalReport, LATENCY_UNIT};
pub use memory::{HeapCounter, HeapFigures, MemoryProbe, ProcessMemory, parse_status};
pub use options::{
    DEFAULT_DURATION, DEFAULT_WRITE_PARTITIONS, DISK_RESERVE, DeviceArg, Distribution,
    FLUSH_BANDWIDTH_DEVICE, FlushPolicyChoice, MAX_ASYNC_IN_FLIGHT, MAX_COLUMNS,
    MAX_MACHINE_BUDGET, MAX_PARTITION_SIZE, MAX_ROW_SIZE, MAX_TABLES, MAX_THREADS,
    MIN_MACHINE_BUDGET, Mode, Populate, Ratio, StopCondition, StressOptions, WorkloadSpec,
    budget_for_memory, check_disk_space, default_partitions, machine_budget,
};
pub use program::{TargetFactory, describe_devices, execute, hdr_log_path, policies};
pub use progress::{PROGRESS_HEADER, ProgressPrinter, progress_line};
pub use rate_table::RateTable;
pub use runner::{Observer, Observers, PopulateReport, RunConfig, populate, run};
pub use summary::{Figure, LatencySummary, Summary, compare, compare_json, write_json};
pub use target::{LogRoomWaits, Target, TargetStats};
pub use workload::{Op, OpGenerator, ValuePool, partition_key, table_name};
