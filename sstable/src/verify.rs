//! Full verification of an sstable: every checksum, the stream ordering
//! invariants, and agreement between Data, Index, Summary, Filter,
//! Statistics and Digest.

use std::collections::VecDeque;

use crate::block::{HEADER_LEN, PREAMBLE_LEN, read_block};
use crate::error::{Component, Error, io_err};
use crate::index::IndexEntry;
use crate::reader::{DataCursor, Sstable, decode_index_block};
use crate::toc::decode_digest;
use crate::tracker::Tracker;

/// Bytes of Data read at a time to compute its digest.
const DIGEST_READ_CHUNK: usize = 1 << 20;

/// What a successful verification checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct VerifyReport {
    /// Partitions checked.
    pub partitions: u64,
    /// Fragments decoded and checked.
    pub fragments: u64,
    /// Data blocks whose checksum was checked.
    pub data_blocks: u64,
    /// Index blocks whose checksum was checked.
    pub index_blocks: u64,
}

/// Walks the Index blocks in order, checking each against the Summary.
struct IndexWalker<'a> {
    table: &'a Sstable,
    offset: u64,
    blocks: u64,
    pending: VecDeque<IndexEntry>,
}

impl IndexWalker<'_> {
    fn next(&mut self) -> Result<Option<IndexEntry>, Error> {
        let inner = &self.table.inner;
        let origin = inner.origin(Component::Index);
        while self.pending.is_empty() {
            if self.offset >= inner.stats.index_size {
                return Ok(None);
            }
            let block = read_block(inner.source(Component::Index), self.offset, origin)?;
            let entries = decode_index_block(&block.raw, self.offset + HEADER_LEN as u64, origin)?;
            let Some(first) = entries.first() else {
                return Err(origin.corrupt(self.offset, "empty Index block"));
            };
            let sampled = inner.summary.entries.get(self.blocks as usize);
            let agrees = sampled.is_some_and(|s| {
                s.index_offset == self.offset
                    && s.token == first.key.token().value()
                    && s.key == first.key.key().as_bytes()
            });
            if !agrees {
                return Err(inner.origin(Component::Summary).corrupt(
                    8,
                    format!("Summary entry {} does not describe the Index block at offset {} (first key {})", self.blocks, self.offset, first.key),
                ));
            }
            self.blocks += 1;
            self.offset = block.next;
            self.pending.extend(entries);
        }
        Ok(self.pending.pop_front())
    }
}

impl Sstable {
    /// Checks everything: every block checksum of Data and Index, the
    /// Digest, the fragment stream's ordering rules, that the Index lists
    /// exactly the partitions in Data at the positions, sizes and
    /// clustering blocks they have, that the Summary samples exactly the
    /// Index blocks, that the Filter admits every key, and that the
    /// Statistics equal what the data says. The first problem is returned
    /// as [`Error::Corrupt`] naming the file, component and offset.
    pub fn verify(&self) -> Result<VerifyReport, Error> {
        let inner = &self.inner;
        // Data, fragment by fragment, against the Index.
        let stats = &inner.stats;
        let data_origin = inner.origin(Component::Data);
        let mut tracker = Tracker::new(stats.large_partition_threshold, stats.compression);
        let mut cursor = DataCursor::start();
        let mut walker = IndexWalker {
            table: self,
            offset: PREAMBLE_LEN,
            blocks: 0,
            pending: VecDeque::new(),
        };
        let mut report = VerifyReport::default();
        let mut raw_offset = 0u64;
        let mut last_block = None;
        while let Some((f, block, in_block, len)) = cursor.next_located(inner)? {
            let at = block + HEADER_LEN as u64 + in_block;
            if last_block != Some(block) {
                last_block = Some(block);
                tracker.stats.data_blocks += 1;
            }
            tracker
                .check(&f)
                .map_err(|reason| data_origin.corrupt(at, reason))?;
            report.fragments += 1;
            if let Some(entry) = tracker.record(&f, block, in_block, raw_offset, len) {
                report.partitions += 1;
                let Some(stored) = walker.next()? else {
                    return Err(inner.origin(Component::Index).corrupt(
                        stats.index_size,
                        format!("Index has no entry for partition {}", entry.key),
                    ));
                };
                if stored != entry {
                    return Err(inner.origin(Component::Index).corrupt(
                        walker.offset,
                        format!("Index entry for {} disagrees with Data (stored {stored:?}, Data says {entry:?})", stored.key),
                    ));
                }
                if !inner.filter.may_contain(entry.key.token().value() as u64) {
                    return Err(inner.origin(Component::Filter).corrupt(
                        8,
                        format!("Filter rules out partition {}, which Data holds", entry.key),
                    ));
                }
            }
            raw_offset += len;
        }
        if !tracker.between_partitions() {
            return Err(data_origin.corrupt(stats.data_size, "Data ends inside a partition"));
        }
        if let Some(extra) = walker.next()? {
            return Err(inner.origin(Component::Index).corrupt(
                walker.offset,
                format!(
                    "Index lists partition {} which Data does not hold",
                    extra.key
                ),
            ));
        }
        if walker.blocks as usize != inner.summary.entries.len() {
            return Err(inner.origin(Component::Summary).corrupt(
                8,
                format!(
                    "Summary has {} entries for {} Index blocks",
                    inner.summary.entries.len(),
                    walker.blocks
                ),
            ));
        }
        let mut expected = tracker.stats;
        expected.data_size = stats.data_size;
        expected.data_raw_bytes = raw_offset;
        expected.index_size = stats.index_size;
        expected.index_blocks = walker.blocks;
        if expected != *stats {
            return Err(inner.origin(Component::Statistics).corrupt(
                8,
                format!("Statistics {stats:?} disagree with the data, which gives {expected:?}"),
            ));
        }
        // Digest of the whole Data file (last: a damaged block is reported
        // more precisely above).
        let data = inner.source(Component::Data);
        let mut crc = 0u32;
        let mut buf = vec![0u8; DIGEST_READ_CHUNK];
        let mut at = 0u64;
        while at < data.len() {
            let n = (data.len() - at).min(buf.len() as u64) as usize;
            data.read_exact_at(&mut buf[..n], at)
                .map_err(|e| io_err("read", self.component_path(Component::Data))(e))?;
            crc = crc32c::crc32c_append(crc, &buf[..n]);
            at += n as u64;
        }
        let digest_src = inner.source(Component::Digest);
        let digest_len = digest_src.len().min(64) as usize;
        let mut digest = vec![0u8; digest_len];
        digest_src
            .read_exact_at(&mut digest, 0)
            .map_err(|e| io_err("read", self.component_path(Component::Digest))(e))?;
        if digest_src.len() > 64 {
            return Err(inner
                .origin(Component::Digest)
                .corrupt(64, "digest is longer than 64 bytes"));
        }
        let stored = decode_digest(&digest, inner.origin(Component::Digest))?;
        if stored != crc {
            return Err(inner.origin(Component::Digest).corrupt(
                0,
                format!("Digest says crc32c {stored} but Data hashes to {crc}"),
            ));
        }

        report.data_blocks = expected.data_blocks;
        report.index_blocks = walker.blocks;
        Ok(report)
    }
}
