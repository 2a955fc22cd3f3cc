//! Encoding of fragments, rows, cells, tombstones and clustering positions
//! inside Data blocks and Index entries (see FORMAT.md, "Data").

use bytes::Bytes;
use mutation::{
    Cell, ClusteringKey, DecoratedKey, Fragment, Position, Row, RowMarker, Timestamp, Tombstone,
    Ttl,
};

use crate::error::Error;
use crate::varint::{Decoder, put_bytes, put_ivarint, put_uvarint};

const TAG_PARTITION_START: u8 = 1;
const TAG_STATIC_ROW: u8 = 2;
const TAG_CLUSTERING_ROW: u8 = 3;
const TAG_RANGE_TOMBSTONE_CHANGE: u8 = 4;
const TAG_PARTITION_END: u8 = 5;

const CELL_LIVE: u8 = 0;
const CELL_EXPIRING: u8 = 1;
const CELL_DEAD: u8 = 2;

const ROW_HAS_MARKER: u8 = 1;
const ROW_HAS_TOMBSTONE: u8 = 2;
const ROW_MARKER_EXPIRES: u8 = 4;

/// Largest key (partition or clustering).
pub(crate) const MAX_KEY: u64 = mutation::MAX_KEY_LEN as u64;
/// Largest cell value; a block must hold a whole fragment.
const MAX_VALUE: u64 = crate::block::MAX_BLOCK as u64;

fn put_u32v(out: &mut Vec<u8>, v: u32) {
    put_uvarint(out, u64::from(v));
}

fn put_ts(out: &mut Vec<u8>, ts: Timestamp) {
    put_ivarint(out, ts.micros());
}

/// Appends an optional tombstone.
pub(crate) fn put_tombstone_opt(out: &mut Vec<u8>, t: Option<Tombstone>) {
    match t {
        None => out.push(0),
        Some(t) => {
            out.push(1);
            put_tombstone(out, t);
        }
    }
}

fn put_tombstone(out: &mut Vec<u8>, t: Tombstone) {
    put_ts(out, t.timestamp);
    put_u32v(out, t.local_deletion_time);
}

fn put_ttl(out: &mut Vec<u8>, ttl: Ttl) {
    put_u32v(out, ttl.ttl());
    put_u32v(out, ttl.expiry());
}

/// Appends a clustering position.
pub(crate) fn put_position(out: &mut Vec<u8>, p: &Position) {
    match p {
        Position::BeforeAll => out.push(0),
        Position::Before(k) => {
            out.push(1);
            put_bytes(out, k.as_bytes());
        }
        Position::At(k) => {
            out.push(2);
            put_bytes(out, k.as_bytes());
        }
        Position::After(k) => {
            out.push(3);
            put_bytes(out, k.as_bytes());
        }
        Position::AfterAll => out.push(4),
    }
}

fn put_row(out: &mut Vec<u8>, row: &Row) {
    let mut flags = 0;
    if let Some(m) = &row.marker {
        flags |= ROW_HAS_MARKER;
        if m.ttl.is_some() {
            flags |= ROW_MARKER_EXPIRES;
        }
    }
    if row.tombstone.is_some() {
        flags |= ROW_HAS_TOMBSTONE;
    }
    out.push(flags);
    if let Some(m) = &row.marker {
        put_ts(out, m.timestamp);
        if let Some(ttl) = m.ttl {
            put_ttl(out, ttl);
        }
    }
    if let Some(t) = row.tombstone {
        put_tombstone(out, t);
    }
    put_uvarint(out, row.cells.len() as u64);
    let mut prev: Option<u32> = None;
    for (&column, cell) in &row.cells {
        // Columns ascend, so store the gap from the previous one.
        let delta = match prev {
            None => column,
            Some(p) => column - p - 1,
        };
        prev = Some(column);
        put_u32v(out, delta);
        match cell {
            Cell::Live {
                value,
                timestamp,
                ttl: None,
            } => {
                out.push(CELL_LIVE);
                put_ts(out, *timestamp);
                put_bytes(out, value);
            }
            Cell::Live {
                value,
                timestamp,
                ttl: Some(ttl),
            } => {
                out.push(CELL_EXPIRING);
                put_ts(out, *timestamp);
                put_ttl(out, *ttl);
                put_bytes(out, value);
            }
            Cell::Tombstone {
                timestamp,
                local_deletion_time,
            } => {
                out.push(CELL_DEAD);
                put_ts(out, *timestamp);
                put_u32v(out, *local_deletion_time);
            }
        }
    }
}

/// Appends one fragment.
pub(crate) fn encode_fragment(f: &Fragment, out: &mut Vec<u8>) {
    match f {
        Fragment::PartitionStart { key, tombstone } => {
            out.push(TAG_PARTITION_START);
            put_bytes(out, key.key().as_bytes());
            put_tombstone_opt(out, *tombstone);
        }
        Fragment::StaticRow(row) => {
            out.push(TAG_STATIC_ROW);
            put_row(out, row);
        }
        Fragment::ClusteringRow { key, row } => {
            out.push(TAG_CLUSTERING_ROW);
            put_bytes(out, key.as_bytes());
            put_row(out, row);
        }
        Fragment::RangeTombstoneChange {
            position,
            tombstone,
        } => {
            out.push(TAG_RANGE_TOMBSTONE_CHANGE);
            put_position(out, position);
            put_tombstone_opt(out, *tombstone);
        }
        Fragment::PartitionEnd => out.push(TAG_PARTITION_END),
    }
}

fn u32v(d: &mut Decoder<'_>, what: &str) -> Result<u32, Error> {
    let at = d.offset();
    let v = d.uvarint(what)?;
    u32::try_from(v).map_err(|_| d.corrupt_at(at, format!("{what} {v} exceeds u32")))
}

fn timestamp(d: &mut Decoder<'_>, what: &str) -> Result<Timestamp, Error> {
    let at = d.offset();
    let v = d.ivarint(what)?;
    Timestamp::new(v).map_err(|e| d.corrupt_at(at, format!("{what}: {e}")))
}

fn tombstone(d: &mut Decoder<'_>) -> Result<Tombstone, Error> {
    let ts = timestamp(d, "tombstone timestamp")?;
    let ldt = u32v(d, "tombstone deletion time")?;
    Ok(Tombstone::new(ts, ldt))
}

/// Decodes an optional tombstone.
pub(crate) fn tombstone_opt(d: &mut Decoder<'_>) -> Result<Option<Tombstone>, Error> {
    match d.u8("tombstone presence flag")? {
        0 => Ok(None),
        1 => tombstone(d).map(Some),
        f => Err(d.corrupt(format!("tombstone presence flag {f} is neither 0 nor 1"))),
    }
}

fn ttl(d: &mut Decoder<'_>) -> Result<Ttl, Error> {
    let ttl = u32v(d, "TTL")?;
    let expiry = u32v(d, "expiry time")?;
    Ttl::new(ttl, expiry).map_err(|e| d.corrupt(e.to_string()))
}

fn clustering_key(d: &mut Decoder<'_>) -> Result<ClusteringKey, Error> {
    let b = d.bytes("clustering key", MAX_KEY)?;
    ClusteringKey::new(Bytes::copy_from_slice(b)).map_err(|e| d.corrupt(e.to_string()))
}

/// Decodes a clustering position.
pub(crate) fn position(d: &mut Decoder<'_>) -> Result<Position, Error> {
    Ok(match d.u8("position kind")? {
        0 => Position::BeforeAll,
        1 => Position::Before(clustering_key(d)?),
        2 => Position::At(clustering_key(d)?),
        3 => Position::After(clustering_key(d)?),
        4 => Position::AfterAll,
        k => return Err(d.corrupt(format!("unknown position kind {k}"))),
    })
}

fn row(d: &mut Decoder<'_>) -> Result<Row, Error> {
    let flags = d.u8("row flags")?;
    if flags & !(ROW_HAS_MARKER | ROW_HAS_TOMBSTONE | ROW_MARKER_EXPIRES) != 0
        || (flags & ROW_MARKER_EXPIRES != 0 && flags & ROW_HAS_MARKER == 0)
    {
        return Err(d.corrupt(format!("invalid row flags {flags:#04x}")));
    }
    let mut row = Row::new();
    if flags & ROW_HAS_MARKER != 0 {
        let ts = timestamp(d, "row marker timestamp")?;
        row.marker = Some(if flags & ROW_MARKER_EXPIRES != 0 {
            RowMarker::expiring(ts, ttl(d)?)
        } else {
            RowMarker::new(ts)
        });
    }
    if flags & ROW_HAS_TOMBSTONE != 0 {
        row.tombstone = Some(tombstone(d)?);
    }
    // Each cell takes at least 3 bytes.
    let count = d.len("cell count", d.remaining() as u64 / 3)?;
    let mut prev: Option<u32> = None;
    for _ in 0..count {
        let delta = u32v(d, "column id delta")?;
        let column = match prev {
            None => Some(delta),
            Some(p) => p.checked_add(1).and_then(|c| c.checked_add(delta)),
        }
        .ok_or_else(|| d.corrupt("column id overflows u32"))?;
        prev = Some(column);
        let cell = match d.u8("cell kind")? {
            CELL_LIVE => {
                let ts = timestamp(d, "cell timestamp")?;
                let value = Bytes::copy_from_slice(d.bytes("cell value", MAX_VALUE)?);
                Cell::live(value, ts)
            }
            CELL_EXPIRING => {
                let ts = timestamp(d, "cell timestamp")?;
                let ttl = ttl(d)?;
                let value = Bytes::copy_from_slice(d.bytes("cell value", MAX_VALUE)?);
                Cell::expiring(value, ts, ttl)
            }
            CELL_DEAD => {
                let ts = timestamp(d, "cell timestamp")?;
                Cell::tombstone(ts, u32v(d, "cell deletion time")?)
            }
            k => return Err(d.corrupt(format!("unknown cell kind {k}"))),
        };
        row.cells.insert(column, cell);
    }
    Ok(row)
}

/// Decodes one fragment.
pub(crate) fn decode_fragment(d: &mut Decoder<'_>) -> Result<Fragment, Error> {
    let tag_at = d.offset();
    Ok(match d.u8("fragment tag")? {
        TAG_PARTITION_START => {
            let b = d.bytes("partition key", MAX_KEY)?;
            let key = DecoratedKey::from_bytes(Bytes::copy_from_slice(b))
                .map_err(|e| d.corrupt(e.to_string()))?;
            Fragment::PartitionStart {
                key,
                tombstone: tombstone_opt(d)?,
            }
        }
        TAG_STATIC_ROW => Fragment::StaticRow(row(d)?),
        TAG_CLUSTERING_ROW => {
            let key = clustering_key(d)?;
            Fragment::ClusteringRow { key, row: row(d)? }
        }
        TAG_RANGE_TOMBSTONE_CHANGE => {
            let position = position(d)?;
            Fragment::RangeTombstoneChange {
                position,
                tombstone: tombstone_opt(d)?,
            }
        }
        TAG_PARTITION_END => Fragment::PartitionEnd,
        t => return Err(d.corrupt_at(tag_at, format!("unknown fragment tag {t}"))),
    })
}

/// Timestamps carried by a row, for statistics.
pub(crate) fn row_timestamps(row: &Row) -> impl Iterator<Item = i64> + '_ {
    row.marker
        .iter()
        .map(|m| m.timestamp.micros())
        .chain(row.tombstone.iter().map(|t| t.timestamp.micros()))
        .chain(row.cells.values().map(|c| c.timestamp().micros()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Component;
    use crate::varint::Origin;
    use std::path::PathBuf;

    fn ts(v: i64) -> Timestamp {
        Timestamp::from_micros(v)
    }

    fn round_trip(f: &Fragment) {
        let mut out = Vec::new();
        encode_fragment(f, &mut out);
        let p = PathBuf::from("d");
        let mut d = Decoder::new(
            &out,
            0,
            Origin {
                file: &p,
                component: Component::Data,
            },
        );
        assert_eq!(&decode_fragment(&mut d).unwrap(), f);
        assert!(d.is_empty());
    }

    #[test]
    fn every_fragment_and_cell_kind_round_trips() {
        let ttl = Ttl::new(60, 1_000_000).unwrap();
        let mut row = Row::new()
            .with_marker(RowMarker::expiring(ts(-7), ttl))
            .with_tombstone(Tombstone::new(ts(3), u32::MAX));
        row.cells.insert(0, Cell::live(Bytes::new(), ts(i64::MAX)));
        row.cells
            .insert(1, Cell::expiring(b"x".to_vec(), ts(5), ttl));
        row.cells
            .insert(u32::MAX, Cell::tombstone(ts(i64::MIN + 1), 9));
        let k = ClusteringKey::new(b"ck".to_vec()).unwrap();
        for f in [
            Fragment::PartitionStart {
                key: DecoratedKey::from_bytes("pk").unwrap(),
                tombstone: Some(Tombstone::new(ts(1), 2)),
            },
            Fragment::StaticRow(row.clone()),
            Fragment::StaticRow(Row::new()),
            Fragment::ClusteringRow {
                key: k.clone(),
                row,
            },
            Fragment::ClusteringRow {
                key: ClusteringKey::new(Bytes::new()).unwrap(),
                row: Row::new().with_marker(RowMarker::new(ts(0))),
            },
            Fragment::RangeTombstoneChange {
                position: Position::BeforeAll,
                tombstone: Some(Tombstone::new(ts(1), 0)),
            },
            Fragment::RangeTombstoneChange {
                position: Position::Before(k.clone()),
                tombstone: None,
            },
            Fragment::RangeTombstoneChange {
                position: Position::After(k.clone()),
                tombstone: None,
            },
            Fragment::RangeTombstoneChange {
                position: Position::AfterAll,
                tombstone: None,
            },
            Fragment::PartitionEnd,
        ] {
            round_trip(&f);
        }
    }

    #[test]
    fn malformed_encodings_are_corrupt() {
        let p = PathBuf::from("d");
        let origin = Origin {
            file: &p,
            component: Component::Data,
        };
        let cases: [(&[u8], &str); 6] = [
            (&[9], "unknown fragment tag 9"),
            (&[TAG_STATIC_ROW, 0x80], "invalid row flags"),
            (&[TAG_STATIC_ROW, ROW_MARKER_EXPIRES], "invalid row flags"),
            (&[TAG_STATIC_ROW, 0, 1, 0, 7], "unknown cell kind 7"),
            (&[TAG_RANGE_TOMBSTONE_CHANGE, 5], "unknown position kind 5"),
            // A timestamp of i64::MIN (zigzag 2^64 - 1) is not valid.
            (
                &[
                    TAG_STATIC_ROW,
                    ROW_HAS_MARKER,
                    0xff,
                    0xff,
                    0xff,
                    0xff,
                    0xff,
                    0xff,
                    0xff,
                    0xff,
                    0xff,
                    0x01,
                    0,
                ],
                "out of range",
            ),
        ];
        for (bytes, expected) in cases {
            let mut d = Decoder::new(bytes, 100, origin);
            let e = decode_fragment(&mut d).unwrap_err().to_string();
            assert!(
                e.contains(expected) && e.contains("offset 10"),
                "{bytes:?}: {e}"
            );
        }
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

    /// The Data block encoding of version 1 is pinned: sstables written by
    /// an earlier build decode to the same fragments. A change to these
    /// bytes needs a new format version that still reads these.
    #[test]
    fn fragment_bytes_are_pinned() {
        let ttl = Ttl::new(60, 1_000_000).unwrap();
        let row = Row::new()
            .with_marker(RowMarker::expiring(ts(-7), ttl))
            .with_tombstone(Tombstone::new(ts(3), u32::MAX))
            .with_cell(0, Cell::live(&b"v"[..], ts(i64::MAX)))
            .with_cell(1, Cell::expiring(&b"x"[..], ts(5), ttl))
            .with_cell(300, Cell::tombstone(ts(i64::MIN + 1), 9));
        let k = ClusteringKey::new(b"ck".to_vec()).unwrap();
        let cases = [
            (
                Fragment::PartitionStart {
                    key: DecoratedKey::from_bytes("pk").unwrap(),
                    tombstone: Some(Tombstone::new(ts(1), 2)),
                },
                "0102706b010202",
            ),
            (
                Fragment::PartitionStart {
                    key: DecoratedKey::from_bytes("pk").unwrap(),
                    tombstone: None,
                },
                "0102706b00",
            ),
            (
                Fragment::StaticRow(row.clone()),
                "02070d3cc0843d06ffffffff0f030000feffffffffffffffff01017600010a3cc0843d0178aa0202fdffffffffffffffff0109",
            ),
            (
                Fragment::ClusteringRow {
                    key: k.clone(),
                    row: Row::new().with_marker(RowMarker::new(ts(300))),
                },
                "0302636b01d80400",
            ),
            (
                Fragment::RangeTombstoneChange {
                    position: Position::BeforeAll,
                    tombstone: Some(Tombstone::new(ts(-1), 0)),
                },
                "0400010100",
            ),
            (
                Fragment::RangeTombstoneChange {
                    position: Position::Before(k.clone()),
                    tombstone: None,
                },
                "040102636b00",
            ),
            (
                Fragment::RangeTombstoneChange {
                    position: Position::At(k.clone()),
                    tombstone: None,
                },
                "040202636b00",
            ),
            (
                Fragment::RangeTombstoneChange {
                    position: Position::After(k.clone()),
                    tombstone: None,
                },
                "040302636b00",
            ),
            (
                Fragment::RangeTombstoneChange {
                    position: Position::AfterAll,
                    tombstone: None,
                },
                "040400",
            ),
            (Fragment::PartitionEnd, "05"),
        ];
        let p = PathBuf::from("d");
        let origin = Origin {
            file: &p,
            component: Component::Data,
        };
        for (f, pinned) in cases {
            let mut out = Vec::new();
            encode_fragment(&f, &mut out);
            assert_eq!(hex(&out), pinned, "{f:?}");
            let bytes = unhex(pinned);
            let mut d = Decoder::new(&bytes, 0, origin);
            assert_eq!(decode_fragment(&mut d).unwrap(), f);
            assert!(d.is_empty());
        }
    }
}
