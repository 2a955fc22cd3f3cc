//! Encoding of fragments, rows, cells, tombstones and clustering positions
//! inside Data blocks and Index entries (see FORMAT.md, "Data"), on the
//! workspace's codec primitives ([`mutation::codec`]) with format version
//! 1's layout ([`Version1`]).

use mutation::codec::{self, Columns, DecodeError, Format, Layout, Reader, RowFlags};
use mutation::{Fragment, Position, Row, Tombstone};

use crate::decoder::Decoder;
use crate::error::Error;

const TAG_PARTITION_START: u8 = 1;
const TAG_STATIC_ROW: u8 = 2;
const TAG_CLUSTERING_ROW: u8 = 3;
const TAG_RANGE_TOMBSTONE_CHANGE: u8 = 4;
const TAG_PARTITION_END: u8 = 5;

/// Format version 1's choices: every number a varint (timestamps
/// zigzagged), column ids as gaps, values no longer than a block (which
/// must hold a whole fragment), and its own row flag bits.
pub(crate) struct Version1;

impl Format for Version1 {
    const LAYOUT: Layout = Layout {
        columns: Columns::VarintGaps,
        max_value_len: crate::block::MAX_BLOCK,
        row_flags: RowFlags {
            marker: 1,
            tombstone: 2,
            marker_ttl: 4,
        },
        ..Layout::VARINT
    };
}

/// Appends an optional tombstone.
pub(crate) fn put_tombstone_opt(out: &mut Vec<u8>, t: Option<Tombstone>) {
    codec::put_optional_tombstone::<Version1>(out, t);
}

/// Appends a clustering position.
pub(crate) fn put_position(out: &mut Vec<u8>, p: &Position) {
    codec::put_position::<Version1>(out, p);
}

/// Appends one fragment.
pub(crate) fn encode_fragment(f: &Fragment, out: &mut Vec<u8>) {
    match f {
        Fragment::PartitionStart { key, tombstone } => {
            out.push(TAG_PARTITION_START);
            codec::put_key::<Version1>(out, key.key().as_bytes());
            put_tombstone_opt(out, *tombstone);
        }
        Fragment::StaticRow(row) => {
            out.push(TAG_STATIC_ROW);
            codec::put_row::<Version1>(out, row);
        }
        Fragment::ClusteringRow { key, row } => {
            out.push(TAG_CLUSTERING_ROW);
            codec::put_key::<Version1>(out, key.as_bytes());
            codec::put_row::<Version1>(out, row);
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

/// Decodes an optional tombstone.
pub(crate) fn tombstone_opt(d: &mut Decoder<'_>) -> Result<Option<Tombstone>, Error> {
    d.decode(|r| codec::get_optional_tombstone::<Version1>(r, "tombstone"))
}

/// Decodes a clustering position.
pub(crate) fn position(d: &mut Decoder<'_>) -> Result<Position, Error> {
    d.decode(codec::get_position::<Version1>)
}

/// Decodes the bytes of a partition key (at most 65,535 of them).
pub(crate) fn key<'a>(d: &mut Decoder<'a>, what: &str) -> Result<&'a [u8], Error> {
    d.decode(|r| codec::get_key::<Version1>(r, what))
}

/// Decodes one fragment.
pub(crate) fn decode_fragment(d: &mut Decoder<'_>) -> Result<Fragment, Error> {
    d.decode(fragment)
}

fn fragment(r: &mut Reader<'_>) -> Result<Fragment, DecodeError> {
    let tag_at = r.position();
    Ok(match r.u8("fragment tag")? {
        TAG_PARTITION_START => Fragment::PartitionStart {
            key: codec::get_partition_key::<Version1>(r)?,
            tombstone: codec::get_optional_tombstone::<Version1>(r, "partition tombstone")?,
        },
        TAG_STATIC_ROW => Fragment::StaticRow(codec::get_row::<Version1>(r)?),
        TAG_CLUSTERING_ROW => Fragment::ClusteringRow {
            key: codec::get_clustering_key::<Version1>(r)?,
            row: codec::get_row::<Version1>(r)?,
        },
        TAG_RANGE_TOMBSTONE_CHANGE => Fragment::RangeTombstoneChange {
            position: codec::get_position::<Version1>(r)?,
            tombstone: codec::get_optional_tombstone::<Version1>(r, "range tombstone")?,
        },
        TAG_PARTITION_END => Fragment::PartitionEnd,
        t => {
            return Err(DecodeError::new(
                tag_at,
                format!("unknown fragment tag {t}"),
            ));
        }
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
    use crate::decoder::Origin;
    use crate::error::Component;
    use bytes::Bytes;
    use mutation::testing::{hex, unhex};
    use mutation::{Cell, ClusteringKey, DecoratedKey, RowMarker, Timestamp, Ttl};
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
            (&[TAG_STATIC_ROW, 4], "invalid row flags"),
            (&[TAG_STATIC_ROW, 0, 1, 0, 7, 0, 0], "unknown cell kind 7"),
            (&[TAG_RANGE_TOMBSTONE_CHANGE, 5], "unknown position kind 5"),
            // A timestamp of i64::MIN (zigzag 2^64 - 1) is not valid.
            (
                &[
                    TAG_STATIC_ROW,
                    1,
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
