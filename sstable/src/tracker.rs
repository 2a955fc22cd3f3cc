//! Stream validation and the bookkeeping derived from a fragment stream
//! (statistics, index entries, clustering blocks). The writer runs it on
//! the fragments it writes; verify runs the same code on the fragments it
//! decodes and compares the results with the stored components.

use mutation::{DecoratedKey, Fragment, Position, StreamValidator, Tombstone};

use crate::codec::row_timestamps;
use crate::index::{ClusteringBlock, IndexEntry};
use crate::statistics::Statistics;

/// Where the stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Between,
    PartitionStarted,
    InPartition,
}

/// The partition being tracked.
#[derive(Debug)]
struct OpenPartition {
    key: DecoratedKey,
    data_block: u64,
    in_block: u64,
    raw_start: u64,
    cblocks: Vec<ClusteringBlock>,
    /// Encoded size of `cblocks` (upper estimate).
    cblock_bytes: usize,
    /// Data blocks started inside the partition so far.
    blocks_started: u64,
    /// Only every `stride`-th block started inside the partition is
    /// recorded (a power of two, doubled whenever the clustering-block
    /// index outgrows [`MAX_CBLOCK_BYTES`]).
    stride: u64,
    active: Option<Tombstone>,
}

/// Budget for one partition's clustering-block index. Beyond it every
/// other entry is dropped (and then only every 2nd, 4th, ... block is
/// recorded), so an Index entry, and the Index block holding it, stays far
/// below the 64 MiB block limit whatever the partition's size and key
/// lengths; a slice then reads a few more Data blocks.
pub(crate) const MAX_CBLOCK_BYTES: usize = 8 << 20;

/// Upper estimate of a clustering block's encoded size.
fn cblock_size(c: &ClusteringBlock) -> usize {
    // Offset delta (at most 10), position kind and key length (at most
    // 1 + 3), tombstone flag, timestamp and deletion time (at most 16).
    30 + c.first.key().map_or(0, |k| k.len())
}

/// Validates a stream and derives what the other components must say.
#[derive(Debug)]
pub(crate) struct Tracker {
    pub(crate) stats: Statistics,
    pub(crate) hashes: Vec<u64>,
    state: State,
    partition: Option<OpenPartition>,
    threshold: u64,
    validator: StreamValidator,
}

impl Tracker {
    /// A tracker for an sstable whose partitions above `threshold` raw
    /// bytes carry clustering blocks.
    pub(crate) fn new(threshold: u64, compression: bool) -> Self {
        Tracker {
            stats: Statistics {
                compression,
                large_partition_threshold: threshold,
                ..Statistics::default()
            },
            hashes: Vec::new(),
            state: State::Between,
            partition: None,
            threshold,
            validator: StreamValidator::new(),
        }
    }

    /// Checks `f` against the ordering rules of a fragment stream
    /// ([`mutation::StreamValidator`]); must be followed by
    /// [`record`](Tracker::record) when it succeeds.
    pub(crate) fn check(&mut self, f: &Fragment) -> Result<(), String> {
        self.validator.check(f).map_err(|e| e.to_string())
    }

    /// True between partitions (the stream may end here).
    pub(crate) fn between_partitions(&self) -> bool {
        self.state == State::Between
    }

    /// Records a fragment that passed [`check`](Tracker::check), located at
    /// `in_block` in the raw payload of the Data block at `block_start`, with
    /// `raw_offset` raw bytes before it in the whole stream and `len` raw
    /// bytes of its own. Returns the partition's index entry at its end.
    pub(crate) fn record(
        &mut self,
        f: &Fragment,
        block_start: u64,
        in_block: u64,
        raw_offset: u64,
        len: u64,
    ) -> Option<IndexEntry> {
        let stats = &mut self.stats;
        match f {
            Fragment::PartitionStart { key, tombstone } => {
                stats.partitions += 1;
                if let Some(t) = tombstone {
                    stats.partition_tombstones += 1;
                    stats.note_timestamp(t.timestamp.micros());
                }
                self.hashes.push(key.token().value() as u64);
                self.partition = Some(OpenPartition {
                    key: key.clone(),
                    data_block: block_start,
                    in_block,
                    raw_start: raw_offset,
                    cblocks: Vec::new(),
                    cblock_bytes: 0,
                    blocks_started: 0,
                    stride: 1,
                    active: None,
                });
                self.state = State::PartitionStarted;
                return None;
            }
            Fragment::PartitionEnd => {}
            Fragment::StaticRow(row) => {
                stats.static_rows += 1;
                note_row(stats, row);
            }
            Fragment::ClusteringRow { row, .. } => {
                stats.clustering_rows += 1;
                note_row(stats, row);
            }
            Fragment::RangeTombstoneChange { tombstone, .. } => {
                stats.range_tombstone_changes += 1;
                if let Some(t) = tombstone {
                    stats.note_timestamp(t.timestamp.micros());
                }
            }
        }
        let p = self.partition.as_mut()?;
        if in_block == 0 {
            // This fragment opens a Data block inside the partition.
            let first = f.position().unwrap_or(match f {
                Fragment::StaticRow(_) => Position::BeforeAll,
                _ => Position::AfterAll,
            });
            if p.blocks_started % p.stride == 0 {
                let c = ClusteringBlock {
                    block: block_start,
                    first,
                    active: p.active,
                };
                p.cblock_bytes += cblock_size(&c);
                p.cblocks.push(c);
                while p.cblock_bytes > MAX_CBLOCK_BYTES && p.cblocks.len() > 1 {
                    // Recorded blocks are those numbered 0, s, 2s, ...:
                    // keeping the even entries keeps 0, 2s, 4s, ...
                    let mut i = 0;
                    p.cblocks.retain(|_| {
                        i += 1;
                        i % 2 == 1
                    });
                    p.stride *= 2;
                    p.cblock_bytes = p.cblocks.iter().map(cblock_size).sum();
                }
            }
            p.blocks_started += 1;
        }
        if let Fragment::RangeTombstoneChange { tombstone, .. } = f {
            p.active = *tombstone;
        }
        self.state = State::InPartition;
        if !matches!(f, Fragment::PartitionEnd) {
            return None;
        }
        let p = self.partition.take()?;
        self.state = State::Between;
        let size = raw_offset + len - p.raw_start;
        stats.largest_partition = stats.largest_partition.max(size);
        if stats.first_key.is_empty() {
            stats.first_key = p.key.key().as_bytes().to_vec();
        }
        stats.last_key = p.key.key().as_bytes().to_vec();
        Some(IndexEntry {
            key: p.key,
            data_block: p.data_block,
            in_block: p.in_block,
            size,
            cblocks: if size > self.threshold {
                p.cblocks
            } else {
                Vec::new()
            },
        })
    }
}

fn note_row(stats: &mut Statistics, row: &mutation::Row) {
    if row.tombstone.is_some() {
        stats.row_tombstones += 1;
    }
    for cell in row.cells.values() {
        match cell {
            mutation::Cell::Live { ttl, .. } => {
                stats.live_cells += 1;
                if ttl.is_some() {
                    stats.expiring_cells += 1;
                }
            }
            mutation::Cell::Tombstone { .. } => stats.cell_tombstones += 1,
        }
    }
    for ts in row_timestamps(row) {
        stats.note_timestamp(ts);
    }
}
