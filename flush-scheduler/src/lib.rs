//! `flush-scheduler` decides *how* flush jobs run: on a bounded pool of
//! worker threads, one flush per memtable at a time (coalescing duplicate
//! requests), into flush directories chosen round-robin (skipping ones that
//! fail), retrying failed jobs with exponential backoff without ever
//! dropping their memtable, and shutting down cleanly.
//!
//! It knows memtables and sstables only through the [`FlushJob`] trait:
//! `dirty-memory` decides *when* and *what* to flush, and `replica` wires a
//! memtable's flush stream into an sstable writer inside a job.
//!
//! Flush directories are meant to be separate from data directories,
//! ideally on their own device: CASSANDRA-6357 measured a 57% shorter run
//! and a p99.9 latency of 3.3 s instead of 16 s once flushes no longer
//! shared a device with compaction.
//!
//! # Example
//!
//! ```
//! use flush_scheduler::{
//!     FlushContext, FlushError, FlushJob, FlushOutput, FlushScheduler, JobKey, SchedulerConfig,
//! };
//!
//! /// A "memtable" flushed as one file.
//! struct WriteFile {
//!     id: u64,
//!     data: Vec<u8>,
//! }
//!
//! impl FlushJob for WriteFile {
//!     fn key(&self) -> JobKey {
//!         JobKey::new(self.id)
//!     }
//!
//!     fn run(&mut self, ctx: &FlushContext<'_>) -> Result<FlushOutput, FlushError> {
//!         let path = ctx.dir().join(format!("memtable-{}.db", self.id));
//!         // Re-runnable: a retry overwrites a partial file of an earlier attempt.
//!         std::fs::write(&path, &self.data)
//!             .map_err(|e| FlushError::directory_failed(ctx.dir(), e))?;
//!         ctx.report_written(self.data.len() as u64);
//!         Ok(FlushOutput { bytes_written: self.data.len() as u64, files: vec![path] })
//!     }
//! }
//!
//! let dir = tempfile::tempdir()?;
//! let scheduler = FlushScheduler::new(SchedulerConfig::new([dir.path()]).workers(2))?;
//! let handle = scheduler
//!     .submit(Box::new(WriteFile { id: 1, data: b"rows".to_vec() }))
//!     .map_err(|rejected| rejected.error)?;
//! let report = handle.wait()?;
//! assert_eq!(report.attempts, 1);
//! assert_eq!(report.output.bytes_written, 4);
//! assert_eq!(scheduler.metrics().completed, 1);
//! assert!(scheduler.shutdown().is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

mod config;
mod directories;
mod error;
mod handle;
mod job;
mod metrics;
mod scheduler;
mod sync;

pub use config::{DEFAULT_DIRECTORY_COOLDOWN, DEFAULT_WORKERS, RetryPolicy, SchedulerConfig};
pub use error::FlushError;
pub use handle::{FlushHandle, FlushResult};
pub use job::{FlushContext, FlushJob, FlushOutput, FlushReport, JobKey, ProgressListener};
pub use metrics::{DirectoryMetrics, FlushMetrics};
pub use scheduler::{FlushScheduler, Rejected};
