//! Encoding of rows and partition headers into region bytes, on the
//! workspace's codec primitives ([`mutation::codec`]; no unsafe, no
//! external crate).
//!
//! Timestamps, deletion times and TTLs are fixed-width little-endian;
//! counts, column ids and byte-string lengths are LEB128 varints (7 bits a
//! byte, low first, always the shortest form), which are one byte for the
//! usual values where a `u32` takes four: a row of one 200-byte cell takes
//! 214 bytes rather than 222.
//!
//! ```text
//! row    = mutation::codec's row (flags: 1 marker, 2 marker TTL, 4 tombstone)
//! header = [0 | 1 tombstone] static:row rt_count (start:bound end:bound tombstone)*
//! bound  = 0 unbounded | 1 key inclusive | 2 key exclusive
//! ```

use mutation::codec::{self, DecodeError, Format, Int, Layout, Reader};
use mutation::{ClusteringRange, RangeTombstoneList, Row, Tombstone};

use crate::Error;

/// The region's choices: fixed-width times, varint counts, column ids and
/// lengths.
struct Region;

impl Format for Region {
    const LAYOUT: Layout = Layout {
        timestamp: Int::Fixed,
        time: Int::Fixed,
        ..Layout::VARINT
    };
}

/// Stored bytes that do not decode: a bug, never bad input.
fn corrupt(e: DecodeError) -> Error {
    Error::Corrupt {
        detail: e.to_string(),
    }
}

/// Appends the encoding of a row.
pub(crate) fn encode_row(out: &mut Vec<u8>, row: &Row) {
    codec::put_row::<Region>(out, row);
}

/// Decodes a row.
pub(crate) fn decode_row(bytes: &[u8]) -> Result<Row, Error> {
    let mut r = Reader::new(bytes);
    let row = codec::get_row::<Region>(&mut r).map_err(corrupt)?;
    r.expect_end("a row").map_err(corrupt)?;
    Ok(row)
}

/// Decodes a row whose values are slices of `bytes` (no copy).
pub(crate) fn decode_row_shared(bytes: &bytes::Bytes) -> Result<Row, Error> {
    let mut r = Reader::new_shared(bytes);
    let row = codec::get_row::<Region>(&mut r).map_err(corrupt)?;
    r.expect_end("a row").map_err(corrupt)?;
    Ok(row)
}

/// What a partition header holds: everything but the clustering rows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) tombstone: Option<Tombstone>,
    pub(crate) static_row: Row,
    pub(crate) range_tombstones: RangeTombstoneList,
}

/// Encodes a partition header.
#[cfg(test)]
pub(crate) fn encode_header(header: &Header) -> Vec<u8> {
    let mut out = Vec::new();
    encode_header_into(&mut out, header);
    out
}

/// Appends the encoding of a partition header to `out`.
pub(crate) fn encode_header_into(out: &mut Vec<u8>, header: &Header) {
    codec::put_optional_tombstone::<Region>(out, header.tombstone);
    codec::put_row::<Region>(out, &header.static_row);
    let rts = header.range_tombstones.to_range_tombstones();
    codec::put_count::<Region>(out, rts.len());
    for rt in &rts {
        codec::put_bound::<Region>(out, rt.range.start());
        codec::put_bound::<Region>(out, rt.range.end());
        codec::put_tombstone::<Region>(out, rt.tombstone);
    }
}

/// Decodes a partition header.
pub(crate) fn decode_header(bytes: &[u8]) -> Result<Header, Error> {
    let mut r = Reader::new(bytes);
    let header = header(&mut r).map_err(corrupt)?;
    r.expect_end("a partition header").map_err(corrupt)?;
    Ok(header)
}

fn header(r: &mut Reader<'_>) -> Result<Header, DecodeError> {
    let tombstone = codec::get_optional_tombstone::<Region>(r, "partition tombstone")?;
    let static_row = codec::get_row::<Region>(r)?;
    let mut range_tombstones = RangeTombstoneList::new();
    // Two unbounded bounds and a tombstone: 1 + 1 + 12 bytes.
    for _ in 0..codec::get_count::<Region>(r, "range tombstone count", 14)? {
        let start = r.position();
        let lo = codec::get_bound::<Region>(r)?;
        let hi = codec::get_bound::<Region>(r)?;
        let range =
            ClusteringRange::new(lo, hi).map_err(|e| DecodeError::new(start, e.to_string()))?;
        let t = codec::get_tombstone::<Region>(r, "range tombstone")?;
        range_tombstones.apply(&range, t);
    }
    Ok(Header {
        tombstone,
        static_row,
        range_tombstones,
    })
}

/// How many range tombstones (disjoint ranges) a list holds.
pub(crate) fn range_tombstone_count(list: &RangeTombstoneList) -> usize {
    list.changes().iter().filter(|(_, t)| t.is_some()).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mutation::testing::{hex, unhex};
    use mutation::{Bound, Cell, ClusteringKey, RowMarker, Timestamp, Ttl};

    #[test]
    fn rows_and_headers_round_trip() {
        let ts = Timestamp::from_micros(5);
        let ttl = Ttl::new(10, 100).unwrap();
        let row = Row::new()
            .with_marker(RowMarker::expiring(ts, ttl))
            .with_tombstone(Tombstone::new(Timestamp::from_micros(1), 7))
            .with_cell(1, Cell::live(&b"v"[..], ts))
            .with_cell(2, Cell::expiring(vec![0u8; 300], ts, ttl))
            .with_cell(3, Cell::tombstone(ts, 9));
        let mut out = Vec::new();
        encode_row(&mut out, &row);
        assert_eq!(decode_row(&out).unwrap(), row);
        assert!(decode_row(&out[..out.len() - 1]).is_err());

        let mut rts = RangeTombstoneList::new();
        let k = |s: &str| ClusteringKey::new(s.as_bytes().to_vec()).unwrap();
        rts.apply(
            &ClusteringRange::new(Bound::Included(k("a")), Bound::Excluded(k("c"))).unwrap(),
            Tombstone::new(ts, 1),
        );
        rts.apply(
            &ClusteringRange::new(Bound::Excluded(k("b")), Bound::Unbounded).unwrap(),
            Tombstone::new(Timestamp::from_micros(6), 1),
        );
        let header = Header {
            tombstone: Some(Tombstone::new(Timestamp::from_micros(2), 3)),
            static_row: row,
            range_tombstones: rts,
        };
        let bytes = encode_header(&header);
        assert_eq!(decode_header(&bytes).unwrap(), header);
        assert_eq!(range_tombstone_count(&header.range_tombstones), 2);
    }

    #[test]
    fn malformed_rows_and_headers_are_corrupt() {
        // A cell count with bits above 32, an overlong one, a sixth byte.
        for bad in [
            &[0, 0xFF, 0xFF, 0xFF, 0xFF, 0x10][..],
            &[0, 0x80, 0x00],
            &[0, 0x80, 0x80, 0x80, 0x80, 0x80, 0],
        ] {
            let err = decode_row(bad).unwrap_err();
            assert!(matches!(err, Error::Corrupt { .. }), "{err}");
            assert!(err.to_string().contains("varint for cell count"), "{err}");
        }
        let err = decode_row(&[0, 0, 9]).unwrap_err().to_string();
        assert_eq!(
            err,
            "memtable storage is corrupt: at byte 2: 1 trailing bytes after a row"
        );
        let err = decode_header(&[2]).unwrap_err().to_string();
        assert!(err.contains("tombstone presence flag 2"), "{err}");
        let header = Header {
            tombstone: Some(Tombstone::new(Timestamp::from_micros(2), 3)),
            ..Header::default()
        };
        let bytes = encode_header(&header);
        for n in 0..bytes.len() {
            let err = decode_header(&bytes[..n]).unwrap_err();
            assert!(matches!(err, Error::Corrupt { .. }), "{n}: {err}");
        }
    }

    #[test]
    fn a_row_of_one_cell_takes_its_value_and_14_bytes() {
        let row = Row::new().with_cell(0, Cell::live(vec![7u8; 200], Timestamp::from_micros(2)));
        let mut out = Vec::new();
        encode_row(&mut out, &row);
        // Flags, cell count, column, kind, timestamp, length (2 bytes).
        assert_eq!(out.len(), 1 + 1 + 1 + 1 + 8 + 2 + 200);
        assert_eq!(decode_row(&out).unwrap(), row);
        // A column id above one byte and many cells.
        let mut wide = Row::new();
        for c in [0, 127, 128, 70_000, u32::MAX] {
            wide = wide.with_cell(c, Cell::live(vec![1u8; 130], Timestamp::from_micros(3)));
        }
        out.clear();
        encode_row(&mut out, &wide);
        assert_eq!(decode_row(&out).unwrap(), wide);
    }

    /// The layout of region bytes is pinned: a change to it is a change to
    /// every reader of a memtable's entries, made on purpose or not at all.
    #[test]
    fn row_and_header_bytes_are_pinned() {
        let ts = Timestamp::from_micros;
        let ttl = Ttl::new(10, 100).unwrap();
        let row = Row::new()
            .with_marker(RowMarker::expiring(ts(5), ttl))
            .with_tombstone(Tombstone::new(ts(-1), 7))
            .with_cell(1, Cell::live(&b"v"[..], ts(5)))
            .with_cell(300, Cell::expiring(&b"e"[..], ts(6), ttl))
            .with_cell(70_000, Cell::tombstone(ts(7), 9));
        let mut out = Vec::new();
        encode_row(&mut out, &row);
        const ROW: &str = "0705000000000000000a00000064000000ffffffffffffffff0700000003010005000000000000000176ac020106000000000000000a000000640000000165f0a20402070000000000000009000000";
        assert_eq!(hex(&out), ROW);
        assert_eq!(decode_row(&unhex(ROW)).unwrap(), row);
        let plain = Row::new().with_marker(RowMarker::new(ts(2)));
        out.clear();
        encode_row(&mut out, &plain);
        const PLAIN: &str = "01020000000000000000";
        assert_eq!(hex(&out), PLAIN);
        assert_eq!(decode_row(&unhex(PLAIN)).unwrap(), plain);

        let k = |s: &str| ClusteringKey::new(s.as_bytes().to_vec()).unwrap();
        let mut rts = RangeTombstoneList::new();
        rts.apply(
            &ClusteringRange::new(Bound::Included(k("a")), Bound::Excluded(k("c"))).unwrap(),
            Tombstone::new(ts(4), 1),
        );
        rts.apply(
            &ClusteringRange::new(Bound::Excluded(k("d")), Bound::Unbounded).unwrap(),
            Tombstone::new(ts(3), 2),
        );
        let header = Header {
            tombstone: Some(Tombstone::new(ts(2), 3)),
            static_row: Row::new().with_cell(3, Cell::live(&b"s"[..], ts(5))),
            range_tombstones: rts,
        };
        const HEADER: &str = "0102000000000000000300000000010300050000000000000001730201016102016304000000000000000100000002016400030000000000000002000000";
        assert_eq!(hex(&encode_header(&header)), HEADER);
        assert_eq!(decode_header(&unhex(HEADER)).unwrap(), header);
        const EMPTY: &str = "00000000";
        assert_eq!(hex(&encode_header(&Header::default())), EMPTY);
        assert_eq!(decode_header(&unhex(EMPTY)).unwrap(), Header::default());
    }
}
