//! `sstable`: placeholder root while the format modules are built.
#![forbid(unsafe_code)]

mod block;
mod bloom;
mod codec;
mod crc;
mod data_writer;
mod directory;
mod error;
mod index;
mod reader;
mod slice;
mod statistics;
mod storage;
mod summary;
mod sync;
mod toc;
mod tracker;
mod varint;
mod verify;
mod writer;

pub use directory::{SstableDirectory, component_path, parse_component_path};
pub use error::{Component, Error, Result};
pub use reader::{Sstable, SstableReader};
pub use statistics::Statistics;
pub use verify::VerifyReport;
pub use writer::{CommitStep, CommittedSstable, Writer, WriterOptions};

/// Version of the on-disk format written and read by this crate.
pub const FORMAT_VERSION: u32 = 1;

const DATA_MAGIC: &[u8; 4] = b"SSTD";
const INDEX_MAGIC: &[u8; 4] = b"SSTI";
const SUMMARY_MAGIC: &[u8; 4] = b"SSTS";
const FILTER_MAGIC: &[u8; 4] = b"SSTF";
const STATISTICS_MAGIC: &[u8; 4] = b"SSTT";
