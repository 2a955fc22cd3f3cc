//! The engine of `replica-stress`, the load generator: its options
//! ([`StressOptions`]) and the deterministic workload ([`OpGenerator`]).

mod options;
mod workload;

pub use options::{
    DEFAULT_DURATION, Distribution, MAX_PARTITION_SIZE, MAX_ROW_SIZE, MAX_TABLES, MAX_THREADS,
    Mode, Ratio, StopCondition, StressOptions, WorkloadSpec,
};
pub use workload::{Op, OpGenerator, ValuePool, partition_key, table_name};
