//! Encoding of rows and partition headers into region bytes (a small safe
//! layer of little-endian integers; no unsafe, no external crate).
//!
//! Timestamps, deletion times and TTLs are fixed-width little-endian;
//! counts, column ids and byte-string lengths are LEB128 varints (7 bits a
//! byte, low first, always the shortest form), which are one byte for the
//! usual values where a `u32` takes four: a row of one 200-byte cell takes
//! 214 bytes rather than 222.

use std::ops::Bound;

use mutation::{
    Cell, ClusteringKey, ClusteringRange, RangeTombstoneList, Row, RowMarker, Timestamp, Tombstone,
    Ttl,
};

use crate::Error;

fn corrupt(detail: impl Into<String>) -> Error {
    Error::Corrupt {
        detail: detail.into(),
    }
}

struct Decoder<'a> {
    rest: &'a [u8],
}

impl<'a> Decoder<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Error> {
        let (head, tail) = self
            .rest
            .split_at_checked(n)
            .ok_or_else(|| corrupt("value truncated"))?;
        self.rest = tail;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, Error> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, Error> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    /// A LEB128 varint of at most 32 bits ([`mutation::leb128`]).
    fn varint(&mut self) -> Result<u32, Error> {
        match mutation::leb128::get(self.rest, 32) {
            Ok((value, len)) => {
                self.rest = &self.rest[len..];
                Ok(u32::try_from(value).expect("at most 32 bits"))
            }
            Err(malformed) => Err(corrupt(format!("{malformed} (at most 32 bits)"))),
        }
    }
    fn i64(&mut self) -> Result<i64, Error> {
        Ok(i64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    fn bytes(&mut self) -> Result<&'a [u8], Error> {
        let n = self.varint()? as usize;
        self.take(n)
    }
    fn tombstone(&mut self) -> Result<Tombstone, Error> {
        let ts = Timestamp::from_micros(self.i64()?);
        Ok(Tombstone::new(ts, self.u32()?))
    }
    fn ttl(&mut self) -> Result<Ttl, Error> {
        let ttl = self.u32()?;
        let expiry = self.u32()?;
        Ttl::new(ttl, expiry).map_err(|e| corrupt(e.to_string()))
    }
}

fn put_tombstone(out: &mut Vec<u8>, t: Tombstone) {
    out.extend_from_slice(&t.timestamp.micros().to_le_bytes());
    out.extend_from_slice(&t.local_deletion_time.to_le_bytes());
}

fn put_ttl(out: &mut Vec<u8>, t: Ttl) {
    out.extend_from_slice(&t.ttl().to_le_bytes());
    out.extend_from_slice(&t.expiry().to_le_bytes());
}

/// Appends `v` as a LEB128 varint (1 to 5 bytes; [`mutation::leb128`]).
fn put_varint(out: &mut Vec<u8>, v: u32) {
    mutation::leb128::put(out, u64::from(v));
}

/// Lengths fit 32 bits: a stored string's length is kept in 32 bits
/// (`tree::MAX_STRING`), and a mutation's values are far smaller.
fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_varint(out, b.len() as u32);
    out.extend_from_slice(b);
}

/// Appends the encoding of a row.
pub(crate) fn encode_row(out: &mut Vec<u8>, row: &Row) {
    let flags = u8::from(row.marker.is_some())
        | u8::from(row.marker.is_some_and(|m| m.ttl.is_some())) << 1
        | u8::from(row.tombstone.is_some()) << 2;
    out.push(flags);
    if let Some(m) = row.marker {
        out.extend_from_slice(&m.timestamp.micros().to_le_bytes());
        if let Some(ttl) = m.ttl {
            put_ttl(out, ttl);
        }
    }
    if let Some(t) = row.tombstone {
        put_tombstone(out, t);
    }
    put_varint(out, row.cells.len() as u32);
    for (&column, cell) in &row.cells {
        put_varint(out, column);
        match cell {
            Cell::Live {
                value,
                timestamp,
                ttl,
            } => {
                out.push(if ttl.is_some() { 1 } else { 0 });
                out.extend_from_slice(&timestamp.micros().to_le_bytes());
                if let Some(ttl) = ttl {
                    put_ttl(out, *ttl);
                }
                put_bytes(out, value);
            }
            Cell::Tombstone {
                timestamp,
                local_deletion_time,
            } => {
                out.push(2);
                put_tombstone(out, Tombstone::new(*timestamp, *local_deletion_time));
            }
        }
    }
}

fn decode_row_from(d: &mut Decoder<'_>) -> Result<Row, Error> {
    let flags = d.u8()?;
    let mut row = Row::new();
    if flags & 1 != 0 {
        let ts = Timestamp::from_micros(d.i64()?);
        row.marker = Some(if flags & 2 != 0 {
            RowMarker::expiring(ts, d.ttl()?)
        } else {
            RowMarker::new(ts)
        });
    }
    if flags & 4 != 0 {
        row.tombstone = Some(d.tombstone()?);
    }
    let cells = d.varint()?;
    for _ in 0..cells {
        let column = d.varint()?;
        let cell = match d.u8()? {
            kind @ (0 | 1) => {
                let ts = Timestamp::from_micros(d.i64()?);
                let ttl = if kind == 1 { Some(d.ttl()?) } else { None };
                let value = bytes::Bytes::copy_from_slice(d.bytes()?);
                match ttl {
                    Some(ttl) => Cell::expiring(value, ts, ttl),
                    None => Cell::live(value, ts),
                }
            }
            2 => {
                let t = d.tombstone()?;
                Cell::tombstone(t.timestamp, t.local_deletion_time)
            }
            other => return Err(corrupt(format!("unknown cell kind {other}"))),
        };
        row.cells.insert(column, cell);
    }
    Ok(row)
}

/// Decodes a row.
pub(crate) fn decode_row(bytes: &[u8]) -> Result<Row, Error> {
    let mut d = Decoder { rest: bytes };
    let row = decode_row_from(&mut d)?;
    if !d.rest.is_empty() {
        return Err(corrupt("trailing bytes after a row"));
    }
    Ok(row)
}

/// What a partition header holds: everything but the clustering rows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) tombstone: Option<Tombstone>,
    pub(crate) static_row: Row,
    pub(crate) range_tombstones: RangeTombstoneList,
}

fn put_bound(out: &mut Vec<u8>, b: &Bound<ClusteringKey>) {
    match b {
        Bound::Unbounded => out.push(0),
        Bound::Included(k) => {
            out.push(1);
            put_bytes(out, k.as_bytes());
        }
        Bound::Excluded(k) => {
            out.push(2);
            put_bytes(out, k.as_bytes());
        }
    }
}

fn bound(d: &mut Decoder<'_>) -> Result<Bound<ClusteringKey>, Error> {
    let key = |d: &mut Decoder<'_>| {
        ClusteringKey::new(d.bytes()?.to_vec()).map_err(|e| corrupt(e.to_string()))
    };
    Ok(match d.u8()? {
        0 => Bound::Unbounded,
        1 => Bound::Included(key(d)?),
        2 => Bound::Excluded(key(d)?),
        other => return Err(corrupt(format!("unknown bound kind {other}"))),
    })
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
    match header.tombstone {
        Some(t) => {
            out.push(1);
            put_tombstone(out, t);
        }
        None => out.push(0),
    }
    encode_row(out, &header.static_row);
    let rts = header.range_tombstones.to_range_tombstones();
    put_varint(out, rts.len() as u32);
    for rt in &rts {
        put_bound(out, rt.range.start());
        put_bound(out, rt.range.end());
        put_tombstone(out, rt.tombstone);
    }
}

/// Decodes a partition header.
pub(crate) fn decode_header(bytes: &[u8]) -> Result<Header, Error> {
    let mut d = Decoder { rest: bytes };
    let tombstone = match d.u8()? {
        0 => None,
        1 => Some(d.tombstone()?),
        other => return Err(corrupt(format!("unknown tombstone flag {other}"))),
    };
    let static_row = decode_row_from(&mut d)?;
    let mut range_tombstones = RangeTombstoneList::new();
    for _ in 0..d.varint()? {
        let start = bound(&mut d)?;
        let end = bound(&mut d)?;
        let t = d.tombstone()?;
        let range = ClusteringRange::new(start, end).map_err(|e| corrupt(e.to_string()))?;
        range_tombstones.apply(&range, t);
    }
    if !d.rest.is_empty() {
        return Err(corrupt("trailing bytes after a partition header"));
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
    fn varints_round_trip_at_every_width_and_bad_ones_are_corrupt() {
        for v in [
            0,
            1,
            127,
            128,
            300,
            16_383,
            16_384,
            2_097_151,
            2_097_152,
            u32::MAX,
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            let width = match v {
                0..=127 => 1,
                128..=16_383 => 2,
                16_384..=2_097_151 => 3,
                2_097_152..=268_435_455 => 4,
                _ => 5,
            };
            assert_eq!(out.len(), width, "{v}");
            let mut d = Decoder { rest: &out };
            assert_eq!(d.varint().unwrap(), v);
            assert!(d.rest.is_empty());
            let mut cut = Decoder {
                rest: &out[..out.len() - 1],
            };
            assert!(cut.varint().is_err(), "{v} truncated");
        }
        // Bits above 32, and a sixth byte.
        for bad in [
            &[0xFF, 0xFF, 0xFF, 0xFF, 0x10][..],
            &[0x80, 0x80, 0x80, 0x80, 0x80, 0],
        ] {
            let err = Decoder { rest: bad }.varint().unwrap_err();
            assert!(matches!(err, Error::Corrupt { .. }), "{err}");
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

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
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
