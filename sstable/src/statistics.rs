//! The Statistics component: counts, timestamp range, key range and sizes.

use mutation::codec::{put_bytes, put_ivarint, put_uvarint};

use crate::decoder::{Decoder, Origin};
use crate::error::Error;

/// What an sstable holds, computed by the writer and re-checked by verify.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Statistics {
    /// Number of partitions.
    pub partitions: u64,
    /// Number of static rows.
    pub static_rows: u64,
    /// Number of clustering rows.
    pub clustering_rows: u64,
    /// Number of range tombstone change fragments.
    pub range_tombstone_changes: u64,
    /// Partitions that carry a partition tombstone.
    pub partition_tombstones: u64,
    /// Rows (static or clustering) that carry a row tombstone.
    pub row_tombstones: u64,
    /// Dead cells (cell tombstones).
    pub cell_tombstones: u64,
    /// Live cells, expiring or not.
    pub live_cells: u64,
    /// Live cells that carry a TTL.
    pub expiring_cells: u64,
    /// Smallest write timestamp of any cell, marker or tombstone.
    pub min_timestamp: Option<i64>,
    /// Largest write timestamp of any cell, marker or tombstone.
    pub max_timestamp: Option<i64>,
    /// Bytes of the first partition key in ring order (empty when no partitions).
    pub first_key: Vec<u8>,
    /// Bytes of the last partition key in ring order (empty when no partitions).
    pub last_key: Vec<u8>,
    /// Size of the Data component in bytes.
    pub data_size: u64,
    /// Bytes of encoded fragments before compression and framing.
    pub data_raw_bytes: u64,
    /// Number of Data blocks.
    pub data_blocks: u64,
    /// Size of the Index component in bytes.
    pub index_size: u64,
    /// Number of Index blocks (one Summary entry each).
    pub index_blocks: u64,
    /// Encoded size of the largest partition.
    pub largest_partition: u64,
    /// Whether Data blocks may be LZ4-compressed.
    pub compression: bool,
    /// Partitions larger than this many raw bytes have a clustering-block index.
    pub large_partition_threshold: u64,
}

const MAX_KEY: u64 = 65_535;

impl Statistics {
    /// Notes a timestamp seen in the data.
    pub(crate) fn note_timestamp(&mut self, ts: i64) {
        self.min_timestamp = Some(self.min_timestamp.map_or(ts, |m| m.min(ts)));
        self.max_timestamp = Some(self.max_timestamp.map_or(ts, |m| m.max(ts)));
    }

    /// Encodes the component body.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(128);
        for v in [
            self.partitions,
            self.static_rows,
            self.clustering_rows,
            self.range_tombstone_changes,
            self.partition_tombstones,
            self.row_tombstones,
            self.cell_tombstones,
            self.live_cells,
            self.expiring_cells,
        ] {
            put_uvarint(&mut out, v);
        }
        match (self.min_timestamp, self.max_timestamp) {
            (Some(lo), Some(hi)) => {
                out.push(1);
                put_ivarint(&mut out, lo);
                put_ivarint(&mut out, hi);
            }
            _ => out.push(0),
        }
        put_bytes(&mut out, &self.first_key);
        put_bytes(&mut out, &self.last_key);
        for v in [
            self.data_size,
            self.data_raw_bytes,
            self.data_blocks,
            self.index_size,
            self.index_blocks,
            self.largest_partition,
        ] {
            put_uvarint(&mut out, v);
        }
        out.push(u8::from(self.compression));
        put_uvarint(&mut out, self.large_partition_threshold);
        out
    }

    /// Decodes the component body.
    pub(crate) fn decode(body: &[u8], base: u64, origin: Origin<'_>) -> Result<Self, Error> {
        let mut d = Decoder::new(body, base, origin);
        let mut s = Statistics {
            partitions: d.uvarint("partition count")?,
            static_rows: d.uvarint("static row count")?,
            clustering_rows: d.uvarint("clustering row count")?,
            range_tombstone_changes: d.uvarint("range tombstone change count")?,
            partition_tombstones: d.uvarint("partition tombstone count")?,
            row_tombstones: d.uvarint("row tombstone count")?,
            cell_tombstones: d.uvarint("cell tombstone count")?,
            live_cells: d.uvarint("live cell count")?,
            expiring_cells: d.uvarint("expiring cell count")?,
            ..Statistics::default()
        };
        match d.u8("timestamp presence flag")? {
            0 => {}
            1 => {
                let lo = d.ivarint("minimum timestamp")?;
                let hi = d.ivarint("maximum timestamp")?;
                if lo > hi {
                    return Err(d.corrupt(format!("minimum timestamp {lo} exceeds maximum {hi}")));
                }
                s.min_timestamp = Some(lo);
                s.max_timestamp = Some(hi);
            }
            f => return Err(d.corrupt(format!("timestamp presence flag {f} is neither 0 nor 1"))),
        }
        s.first_key = d.bytes("first key", MAX_KEY)?.to_vec();
        s.last_key = d.bytes("last key", MAX_KEY)?.to_vec();
        s.data_size = d.uvarint("data size")?;
        s.data_raw_bytes = d.uvarint("raw data bytes")?;
        s.data_blocks = d.uvarint("data block count")?;
        s.index_size = d.uvarint("index size")?;
        s.index_blocks = d.uvarint("index block count")?;
        s.largest_partition = d.uvarint("largest partition size")?;
        s.compression = match d.u8("compression flag")? {
            0 => false,
            1 => true,
            f => return Err(d.corrupt(format!("compression flag {f} is neither 0 nor 1"))),
        };
        s.large_partition_threshold = d.uvarint("large partition threshold")?;
        d.expect_end("the statistics")?;
        if (s.partitions == 0) != s.first_key.is_empty()
            || (s.partitions == 0) != s.last_key.is_empty()
        {
            return Err(origin.corrupt(
                base,
                format!("{} partitions disagree with the key range", s.partitions),
            ));
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut s = Statistics {
            partitions: 3,
            clustering_rows: 10,
            first_key: b"a".to_vec(),
            last_key: b"zz".to_vec(),
            data_size: 1000,
            compression: true,
            ..Statistics::default()
        };
        s.note_timestamp(-5);
        s.note_timestamp(7);
        let p = std::path::PathBuf::from("s");
        let origin = Origin {
            file: &p,
            component: crate::error::Component::Statistics,
        };
        assert_eq!(Statistics::decode(&s.encode(), 0, origin).unwrap(), s);
        let mut bad = s.encode();
        bad.push(0);
        assert!(Statistics::decode(&bad, 0, origin).is_err());
    }
}
